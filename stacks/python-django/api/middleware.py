from django.db import DataError
from django.http import JsonResponse


class DataErrorMiddleware:
    """SQLSTATE class 22 (data exception) caused by the client's input is a 400, not a 500."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        if isinstance(exception, DataError):
            return JsonResponse({"error": str(exception).splitlines()[0]}, status=400)
        return None
