"""Minimal settings for a JSON API: no admin, auth, sessions, templates or static files."""

import os

from config.pool_share import pool_share

DEBUG = False
SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "pgarena-benchmark-not-secret")
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]

INSTALLED_APPS = ["api"]
MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "api.middleware.DataErrorMiddleware",
]
ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

USE_TZ = True
TIME_ZONE = "UTC"

_pool_size = pool_share()
DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.postgresql",
        "HOST": os.environ["PGARENA_DB_HOST"],
        "PORT": os.environ["PGARENA_DB_PORT"],
        "NAME": os.environ["PGARENA_DB_NAME"],
        "USER": os.environ["PGARENA_DB_USER"],
        "PASSWORD": os.environ["PGARENA_DB_PASSWORD"],
        # Django 5.1+'s native psycopg pool, one per worker process; a connection is taken for
        # a request and given back when it ends (CONN_MAX_AGE must stay 0 with a pool).
        "OPTIONS": {"pool": {"min_size": _pool_size, "max_size": _pool_size}},
    }
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "loggers": {"django": {"handlers": ["console"], "level": "ERROR"}},
}
