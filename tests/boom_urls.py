"""A URL conf whose one view raises: how the suite checks that a 500 is logged."""

from django.http import HttpRequest, HttpResponse
from django.urls import path


def boom(request: HttpRequest) -> HttpResponse:
    raise RuntimeError("the view failed on purpose")


urlpatterns = [path("boom/", boom)]
