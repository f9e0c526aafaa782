"""API routes under /api/; the schema at /api/schema/, its browsable docs at /api/docs/."""

from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView
from rest_framework.routers import DefaultRouter

from leaderboard.api import answer_export, bundle, kit, overall, quota, submissions, views
from leaderboard.api.token import TokenView

router = DefaultRouter()
router.register("challenges", views.ChallengeViewSet, basename="challenge")
router.register("tasks", views.TaskViewSet, basename="task")
router.register("splits", views.SplitViewSet, basename="split")
router.register("submissions", submissions.SubmissionViewSet, basename="submission")
router.register("runs", views.RunViewSet, basename="run")

app_name = "api"
urlpatterns = [
    path("challenges/<slug:slug>/quota/", quota.QuotaView.as_view(), name="challenge-quota"),
    path(
        "challenges/<slug:slug>/overall/", overall.OverallView.as_view(), name="challenge-overall"
    ),
    path("", include(router.urls)),
    path("bundles/<str:action>/", bundle.BundleView.as_view(), name="bundle"),
    path("challenges/<slug:slug>/bundle/", bundle.ExportView.as_view(), name="bundle-export"),
    path(
        "challenges/<slug:slug>/answers.<str:fmt>",
        answer_export.AnswerExportView.as_view(),
        name="answer-export",
    ),
    path("challenges/<slug:slug>/kit/", kit.KitView.as_view(), name="kit"),
    path(
        "challenges/<slug:slug>/kit/download/", kit.KitDownloadView.as_view(), name="kit-download"
    ),
    path(
        "challenges/<slug:slug>/kit/base-image/",
        kit.BaseImageDownloadView.as_view(),
        name="kit-base-image",
    ),
    path("token/", TokenView.as_view(), name="token"),
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    path("docs/", SpectacularSwaggerView.as_view(url_name="api:schema"), name="docs"),
]
