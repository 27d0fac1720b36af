from django.urls import path

from api import views

urlpatterns = [
    path("api/static", views.static),
    path("api/users", views.users),
    path("api/perf-test", views.perf_test),
    path("api/tx", views.tx),
]

handler400 = "api.views.bad_request"
handler404 = "api.views.not_found"
handler500 = "api.views.server_error"
