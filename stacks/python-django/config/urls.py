from django.urls import path

from api import views

urlpatterns = [
    path("api/static", views.static),
    path("api/users", views.users),
    path("api/perf-test", views.perf_test),
    path("api/tx", views.tx),
    path("api/perf-minimal", views.perf_minimal),
    path("api/perf-post", views.perf_post),
    path("api/perf-nested", views.perf_nested),
    path("api/perf-large-payload", views.perf_large_payload),
    path("api/perf-many-params", views.perf_many_params),
]

handler400 = "api.views.bad_request"
handler404 = "api.views.not_found"
handler500 = "api.views.server_error"
