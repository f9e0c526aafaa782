"""A URL that fails, for the 500 page's test."""

from django.urls import include, path


def broken(request):
    raise RuntimeError("a bug in Podium at /srv/podium/secret/path.py")


urlpatterns = [path("broken/", broken), path("", include("podium.urls"))]
