"""Top-level URLs: pages, the admin, sign-in, the REST API, ``/metrics``, and static assets.

Stored files (split bundles, submission artifacts) have no URL at all.
"""

from django.conf import settings
from django.contrib import admin
from django.contrib.staticfiles.views import serve
from django.urls import include, path, re_path

from podium.metrics import metrics_view

urlpatterns = [
    path("admin/", admin.site.urls),
    path("accounts/", include("allauth.urls")),
    path("api/", include("leaderboard.api.urls")),
    path("metrics", metrics_view, name="metrics"),
    path("", include("leaderboard.urls")),
]
if settings.PODIUM_SERVE_STATIC:
    # One-machine setup: no front web server, so the app serves its own CSS.
    static_prefix = settings.STATIC_URL.lstrip("/")
    urlpatterns.append(
        re_path(rf"^{static_prefix}(?P<path>.*)$", serve, {"insecure": True}, name="static")
    )
