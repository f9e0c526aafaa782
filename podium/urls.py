"""Top-level URLs: pages, the admin, sign-in, the REST API and ``/metrics``.

Static assets are served by WhiteNoise's middleware (``PODIUM_SERVE_STATIC``), the probes
(``/healthz``, ``/readyz``) by ``podium.health.ProbeMiddleware``; stored files (split bundles,
submission artifacts) have no URL at all.
"""

from django.contrib import admin
from django.urls import include, path

from podium.monitoring import metrics_view

urlpatterns = [
    path("admin/", admin.site.urls),
    path("accounts/", include("allauth.urls")),
    path("api/", include("leaderboard.api.urls")),
    path("metrics", metrics_view, name="metrics"),
    path("", include("leaderboard.urls")),
]
