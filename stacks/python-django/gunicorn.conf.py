"""gunicorn settings from pgarena's environment: gthread workers, one thread per pooled connection."""

import os

bind = f"{os.environ['PGARENA_HOST']}:{os.environ['PGARENA_PORT']}"
wsgi_app = "config.wsgi:application"
worker_class = "gthread"
workers = int(os.environ["PGARENA_WORKERS"])
# One thread per pooled connection: each worker's pool is its share of PGARENA_POOL_SIZES ("4,3,3",
# config/pool_share.py); threads is one setting for all workers, so it is the largest share.
threads = max(int(s) for s in os.environ.get("PGARENA_POOL_SIZES", os.environ["PGARENA_POOL_SIZE_PER_WORKER"]).split(",") if s)
graceful_timeout = 5
accesslog = None
control_socket_disable = True  # gunicorn's runtime control socket (~/.gunicorn/gunicorn.ctl) is not needed
# The contract allows a _text of 1000 characters in the query string (up to 12 bytes each when
# URL-encoded); gunicorn's default request-line limit of 4094 bytes (max 8190) would answer 414.
limit_request_line = 0
