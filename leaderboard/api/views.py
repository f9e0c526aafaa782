"""API endpoints; the same visibility rules as the pages (``leaderboard.permissions``)."""

from __future__ import annotations

from django.db.models import QuerySet
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import PermissionDenied, ValidationError
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response

from leaderboard import board_cache, permissions, run_actions
from leaderboard.api import board_serializers, repeat_serializers, serializers
from leaderboard.models import Challenge, EvaluationRun, Split, Task
from leaderboard.repeat_entries import repeat_final_entries
from leaderboard.run_actions import RunActionRefused
from leaderboard.slice_records import slice_records
from leaderboard.views import board_page
from leaderboard.views.boards import entry_records


class ChallengeViewSet(viewsets.ReadOnlyModelViewSet[Challenge]):
    serializer_class = serializers.ChallengeSerializer
    lookup_field = "slug"

    def get_queryset(self) -> QuerySet[Challenge]:
        challenges = permissions.visible_challenges(self.request.user)
        return challenges.prefetch_related("phases", "tasks", "hub_models")


@extend_schema(parameters=[OpenApiParameter("challenge", str, description="challenge slug")])
class TaskViewSet(viewsets.ReadOnlyModelViewSet[Task]):
    serializer_class = serializers.TaskSerializer

    def get_queryset(self) -> QuerySet[Task]:
        challenges = permissions.visible_challenges(self.request.user)
        tasks = Task.objects.filter(challenge__in=challenges).select_related("challenge")
        if slug := self.request.query_params.get("challenge"):
            tasks = tasks.filter(challenge__slug=slug)
        return tasks


@extend_schema(
    parameters=[
        OpenApiParameter("challenge", str, description="challenge slug"),
        OpenApiParameter("task", str, description="task id, e.g. multi-turn-qa"),
        OpenApiParameter(
            "version",
            int,
            description="list this version of each split (a superseded one: its runs and board "
            "as they were); default: the current versions",
        ),
    ]
)
class SplitViewSet(viewsets.ReadOnlyModelViewSet[Split]):
    """Splits; one by id, whichever its version. The list holds the current versions, or those
    numbered ``?version=``."""

    serializer_class = serializers.SplitSerializer

    def get_queryset(self) -> QuerySet[Split]:
        challenges = permissions.visible_challenges(self.request.user)
        splits = Split.objects.filter(task__challenge__in=challenges).select_related(
            "task__challenge"
        )
        if self.action == "list":
            try:
                splits = splits.of_version(self.request.query_params.get("version"))
            except ValueError as exc:
                raise ValidationError({"version": [str(exc)]}) from None
        if slug := self.request.query_params.get("challenge"):
            splits = splits.filter(task__challenge__slug=slug)
        if task_id := self.request.query_params.get("task"):
            splits = splits.filter(task__task_id=task_id)
        return splits

    def _board(self, request: Request) -> tuple[Split, str]:
        """The split asked for and the setting of its board; 403 if its results are hidden."""
        split = self.get_object()
        if not permissions.can_see_results(request.user, split):
            raise PermissionDenied(f"the results of {split} are not public yet")
        split = board_cache.current(split)  # ranked again if a freeze began or ended since
        try:
            setting = board_cache.chosen_setting(split, request.query_params.get("setting"))
        except board_cache.UnknownSetting as exc:
            raise ValidationError({"setting": [str(exc)]}) from None
        return split, setting

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "setting",
                str,
                description="one of the task's settings (the split's `settings`; the first by "
                "default); a task without settings has none to give",
            ),
            OpenApiParameter(
                "raw",
                str,
                description="1: an organiser reads a frozen or laddered board without its "
                "public board's rules (ignored for anyone else)",
            ),
        ],
        responses=board_serializers.LeaderboardSerializer,
    )
    @action(detail=True, methods=["get"])
    def leaderboard(self, request: Request, pk: str | None = None) -> Response:
        """The split's ranked entries in one setting (one per team by the task's rule, plus
        baselines), each with its submission's scores across settings (``derived``). An
        organiser's ``?raw=1`` reads a frozen or laddered board without those rules (as the
        page's); anyone else's is ignored."""
        split, setting = self._board(request)
        raw = board_page.raw_wanted(request.query_params.get("raw"), request.user, split)
        board = board_cache.board(split, setting, raw)
        body = {
            "split": split,
            "setting": setting,
            "settings": split.task.run_settings(),
            "protocol": split.task.benchmark,
            "primary_metric": split.task.primary_metric,
            "entry_rule": split.task.entry_rule,
            "metrics": split.task.declared().metrics,
            "statistics": board.statistics,
            "entries": entry_records(board),
        }
        return Response(board_serializers.LeaderboardSerializer(body).data)

    @extend_schema(
        request=repeat_serializers.RepeatSerializer, responses=repeat_serializers.RepeatedSerializer
    )
    @action(detail=True, methods=["post"], permission_classes=[IsAuthenticated])
    def repeat(self, request: Request, pk: str | None = None) -> Response:
        """An organiser repeats the split's final entries: every ranked entry (baselines apart)
        gets runs up to its task's ``final_repeats`` on this split and setting, queued, logged
        with ``why`` (the teams read it). 200 with how many entries were repeated and those
        that were not; 400 when refused (k is 1, no entry, no reason); 403 for anyone else."""
        split = self.get_object()
        if not permissions.is_organiser(request.user, split.task.challenge):
            raise PermissionDenied(f"only the organisers of {split.task.challenge} repeat entries")
        asked = repeat_serializers.RepeatSerializer(data=request.data)
        asked.is_valid(raise_exception=True)
        try:
            acted, refused = repeat_final_entries(
                split, permissions.signed_in(request.user), asked.validated_data["why"]
            )
        except RunActionRefused as exc:
            return Response({"detail": f"nothing repeated: {exc}"}, status=400)
        body = {"runs_per_entry": split.task.final_repeats, "repeated": acted, "refused": refused}
        return Response(repeat_serializers.RepeatedSerializer(body).data)

    @extend_schema(
        parameters=[
            OpenApiParameter("setting", str, description="as the leaderboard's"),
            OpenApiParameter(
                "dimension",
                str,
                description="a slice dimension of the board (the split's; the first by default)",
            ),
        ],
        responses=OpenApiTypes.OBJECT,
    )
    @action(detail=True, methods=["get"])
    def slices(self, request: Request, pk: str | None = None) -> Response:
        """The board's table of one slice dimension: per entry, its scores on each slice value
        with its rank there, the range of ranks it takes in the value's paired bootstrap, its
        group and its score calibrated by people's labels (where the split's audit labelled
        items of that value); per value, its minimum detectable effect, or why none."""
        split, setting = self._board(request)
        board = board_cache.board(split, setting)
        dimension = request.query_params.get("dimension") or next(iter(board.dimensions), "")
        if dimension not in board.dimensions:
            known = ", ".join(board.dimensions) or "none"
            raise ValidationError({"dimension": [f"{dimension!r}: the board's are {known}"]})
        body = slice_records(split, setting, dimension, board.entries)
        return Response({"split": split.pk, "setting": setting} | body)


class RunViewSet(viewsets.ReadOnlyModelViewSet[EvaluationRun]):
    """Evaluation runs of the user's teams with state, progress and, once done, the score the
    user may see."""

    serializer_class = serializers.RunSerializer
    permission_classes = (IsAuthenticated,)

    def get_queryset(self) -> QuerySet[EvaluationRun]:
        runs = serializers.runs_with_scores().filter(
            pk__in=permissions.visible_runs(self.request.user).values("pk")
        )
        return runs.order_by("-created_at")

    @extend_schema(request=None, responses=serializers.RunSerializer)
    @action(detail=True, methods=["post"])
    def cancel(self, request: Request, pk: str | None = None) -> Response:
        """A member of the run's team cancels it: 200 with the run (``quota_given_back``: its
        submission counts against no quota now); 403 for anyone else; 409 when it has ended."""
        run = self.get_object()
        if not permissions.can_cancel_run(request.user, run):
            raise PermissionDenied("only a member of the run's team cancels it here")
        try:
            given_back = run_actions.cancel_own(run, permissions.signed_in(request.user))
        except run_actions.RunActionRefused as exc:
            return Response({"detail": f"run #{run.pk} was not cancelled: {exc}"}, status=409)
        fresh = self.get_queryset().get(pk=run.pk)
        body = self.get_serializer(fresh).data
        return Response({**body, "quota_given_back": given_back})
