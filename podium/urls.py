"""Top-level URLs: pages (``/metrics`` among them: ``leaderboard.monitoring``), the admin,
sign-in and the REST API. The apps' routes are included by name, so the project imports none of
its apps.

Static assets are served by WhiteNoise's middleware (``PODIUM_SERVE_STATIC``), the probes
(``/healthz``, ``/readyz``) by ``podium.health.ProbeMiddleware``; stored files (split bundles,
submission artifacts) have no URL at all.
"""

from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("accounts/", include("allauth.urls")),
    path("api/", include("leaderboard.api.urls")),
    path("", include("leaderboard.urls")),
]
handler404 = "leaderboard.views.site.not_found"
