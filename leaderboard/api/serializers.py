"""API shapes. Split bundles never appear: no serializer has a field for them."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AnonymousUser
from django.db.models import Prefetch, QuerySet
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from leaderboard import permissions, public_board, repeats, run_queue
from leaderboard.models import (
    Challenge,
    EvaluationRun,
    Phase,
    SliceScore,
    Split,
    Submission,
    SubmissionTask,
    Task,
)
from leaderboard.models.challenge import RUN_LIMITS, RUN_POLICIES
from leaderboard.models.results import ALL
from leaderboard.standing import SeenAction, seen_by_team
from leaderboard.task_environment import environments


class PhaseSerializer(serializers.ModelSerializer[Phase]):
    class Meta:
        model = Phase
        fields = ("name", "starts_at", "ends_at", "quota_per_day", "quota_total")


class HubModelIdSerializer(serializers.Serializer[dict[str, object]]):
    hub_id = serializers.CharField(help_text="as a kit declares it: aicrowd.json's repo_id")
    revision = serializers.CharField()


class TaskEnvironmentSerializer(serializers.Serializer[dict[str, object]]):
    """What a task's agents can run (``leaderboard.task_environment``)."""

    task_id = serializers.CharField()
    models = HubModelIdSerializer(many=True, help_text="the models agents may load by hub id")
    gpu = serializers.BooleanField(help_text="each run gets one GPU of gpu_class")
    gpu_class = serializers.CharField()
    runtime = serializers.CharField(
        allow_null=True,
        help_text="the agents' OCI runtime: runsc (gVisor) or runc; null: Podium's default "
        "(runsc where the node's engine offers it, else runc; the run says which)",
    )
    base_images = serializers.ListField(
        child=serializers.CharField(), help_text="what a Dockerfile may start FROM"
    )
    package_index = serializers.CharField(
        allow_null=True, help_text="the index builds reach; null: builds have no network"
    )


class ChallengeSerializer(serializers.ModelSerializer[Challenge]):
    phases = PhaseSerializer(many=True, read_only=True)
    tasks = serializers.SerializerMethodField()

    class Meta:
        model = Challenge
        fields = ("slug", "name", "description", "phases", "tasks", "created_at")

    @extend_schema_field(TaskEnvironmentSerializer(many=True))
    def get_tasks(self, challenge: Challenge) -> list[dict[str, Any]]:
        return [env.as_dict() for env in environments(challenge)]


class TaskSerializer(serializers.ModelSerializer[Task]):
    challenge: serializers.SlugRelatedField[Challenge] = serializers.SlugRelatedField(
        slug_field="slug", read_only=True
    )
    judge = serializers.CharField(source="judge_label", read_only=True)
    settings = serializers.DictField(source="effective_settings", read_only=True)
    # the API's name for the task's benchmark, as in challenge.yaml and scores.json
    protocol = serializers.CharField(source="benchmark", read_only=True)

    class Meta:
        model = Task
        fields = (
            "id",
            "challenge",
            "task_id",
            "name",
            "description",
            "protocol",
            *RUN_LIMITS,
            *RUN_POLICIES,
            "image_search_enabled",
            "web_search_enabled",
            "judge",
            "settings",
            "primary_metric",
            "entry_rule",
            "final_repeats",
            "quota_per_day",
            "quota_total",
            "quota_concurrent",
            "max_artifact_bytes",
            "splits_selectable",
        )


class SplitSerializer(serializers.ModelSerializer[Split]):
    challenge = serializers.CharField(source="task.challenge.slug", read_only=True)
    task_id = serializers.CharField(source="task.task_id", read_only=True)
    revealed = serializers.SerializerMethodField()

    class Meta:
        model = Split
        fields = (
            "id",
            "challenge",
            "task",
            "task_id",
            "kind",
            "version",
            "superseded_at",
            "groups",
            "items",
            "visibility",
            "reveal_at",
            "revealed",
        )

    def get_revealed(self, split: Split) -> bool:
        return split.is_revealed()


def runs_with_scores() -> QuerySet[EvaluationRun]:
    """Runs as ``RunSerializer`` reads them: task, split, and the overall score row."""
    overall = SliceScore.objects.filter(dimension=ALL[0], value=ALL[1])
    runs = EvaluationRun.objects.select_related("task", "split__task__challenge")
    runs = runs.annotate(repeat_of=repeats.original_run())  # null for a submission's own run
    return runs.prefetch_related(Prefetch("slice_scores", overall, to_attr="overall_scores"))


class RunScoreSerializer(serializers.Serializer[dict[str, object]]):
    """A done run's score: the task's primary metric on the whole split, with its 95 %
    interval, as its benchmark declares it (``scale``: how to show the value)."""

    metric = serializers.CharField()
    label = serializers.CharField()  # type: ignore[assignment]  # a field, popped by DRF's metaclass: not Field.label
    scale = serializers.CharField()
    value = serializers.FloatField(allow_null=True)
    ci95 = serializers.ListField(child=serializers.FloatField(), allow_null=True)


class QueuePlaceSerializer(serializers.Serializer[run_queue.QueuePlace]):
    """A waiting run's place in its stage's queue (``leaderboard.run_queue``)."""

    stage = serializers.CharField()
    queue = serializers.CharField()
    position = serializers.IntegerField(help_text="1: the next run a worker takes")
    working = serializers.IntegerField(
        allow_null=True,
        help_text="runs of this stage that workers hold now, every challenge's (organisers only)",
    )
    depth = serializers.IntegerField(
        allow_null=True, help_text="messages in the queue now, every challenge's (organisers only)"
    )
    typical_run_s = serializers.FloatField(allow_null=True)
    estimated_start = serializers.DateTimeField(allow_null=True)


class PublishedSerializer(serializers.Serializer[public_board.Published]):
    """A run on a public test under the public board's rules (``leaderboard.public_board``):
    the team's score the Ladder published after it and whether the run raised it, or, for a
    submission made during a freeze, when its score appears."""

    released = serializers.FloatField(allow_null=True)
    improved = serializers.BooleanField()
    withheld_until = serializers.DateTimeField(allow_null=True)


class RunSerializer(serializers.ModelSerializer[EvaluationRun]):
    """A run with its progress; once done, its score where the caller may see it (a private
    test's only once the split's results are public: ``score_hidden`` says it is held back)."""

    task_id = serializers.CharField(source="task.task_id", read_only=True)
    split_kind = serializers.CharField(source="split.kind", read_only=True)
    progress = serializers.FloatField(read_only=True, allow_null=True)
    score = serializers.SerializerMethodField()
    score_hidden = serializers.SerializerMethodField()
    published = serializers.SerializerMethodField()
    queue = serializers.SerializerMethodField()
    repeat_of = serializers.SerializerMethodField(
        help_text="the run this one repeats (an organiser's repeat of the final entries: "
        "``trial`` 1 to k - 1); null for a submission's own run"
    )

    class Meta:
        model = EvaluationRun
        fields = (
            "id",
            "submission",
            "task",
            "task_id",
            "split",
            "split_kind",
            "setting",
            "trial",
            "repeat_of",
            "state",
            "failure_reason",
            "items_done",
            "items_total",
            "progress",
            "attempt",
            "created_at",
            "started_at",
            "finished_at",
            "judge_id",
            "scores_complete",
            "score",
            "score_hidden",
            "published",
            "queue",
        )

    def _shown(self, run: EvaluationRun) -> bool:
        """``permissions.can_see_score`` for the caller, each split asked once per answer."""
        request = self.context.get("request")
        if request is None:  # no caller to show a private score to
            return not run.split.is_private
        shown = self.context.get("score_shown")
        if shown is None:
            shown = permissions.score_visibility(request.user)
            if isinstance(self.context, dict):  # the root's dict, kept for the response's runs
                self.context["score_shown"] = shown
        return shown(run)

    @extend_schema_field(RunScoreSerializer(allow_null=True))
    def get_score(self, run: EvaluationRun) -> dict[str, object] | None:
        if run.state != EvaluationRun.State.DONE or not self._shown(run):
            return None
        rows = getattr(run, "overall_scores", None)
        if rows is None:
            rows = list(SliceScore.objects.filter(run=run, dimension=ALL[0], value=ALL[1]))
        if not rows:
            return None
        row, name = rows[0], run.task.primary_metric
        metric = next((m for m in run.task.declared().metrics if m.name == name), None)
        low, high = row.primary_ci_low, row.primary_ci_high
        return {
            "metric": name,
            "label": metric.label if metric else name,
            "scale": metric.scale if metric else "ratio",
            "value": row.primary,
            "ci95": None if low is None or high is None else [low, high],
        }

    @extend_schema_field(QueuePlaceSerializer(allow_null=True))
    def get_queue(self, run: EvaluationRun) -> dict[str, object] | None:
        """Where a waiting run stands in its queue; null when a worker holds it or it ended
        (how many runs the queue holds: its challenge's organisers only)."""
        request = self.context.get("request")
        user = request.user if request is not None else AnonymousUser()
        place = run_queue.place_for(user, run)
        return place.as_dict() if place else None

    def get_repeat_of(self, run: EvaluationRun) -> int | None:
        return repeats.original_of(run)

    def get_score_hidden(self, run: EvaluationRun) -> bool:
        return run.state == EvaluationRun.State.DONE and not self._shown(run)

    @extend_schema_field(PublishedSerializer(allow_null=True))
    def get_published(self, run: EvaluationRun) -> dict[str, object] | None:
        """What the run's public board published of it in place of its score (the Ladder, a
        freeze: ``leaderboard.public_board``); null where its score is shown as it is."""
        found = public_board.published(run)
        return None if found is None else dict(PublishedSerializer(found).data)


class ChosenTaskSerializer(serializers.ModelSerializer[SubmissionTask]):
    """A task the submission is evaluated on; ``splits``: the kinds chosen ([]: every split)."""

    task = serializers.CharField(source="task.task_id")
    splits = serializers.ListField(source="split_kinds", child=serializers.CharField())

    class Meta:
        model = SubmissionTask
        fields = ("task", "splits")


class SeenActionSerializer(serializers.Serializer[SeenAction]):
    """An action on a submission or one of its runs as its team reads it
    (``standing.seen_by_team``): never which organiser, nor the operators' detail."""

    kind = serializers.CharField(help_text="rerun, rejudge, cancel, requeue, disqualify, ...")
    at = serializers.DateTimeField()
    run = serializers.IntegerField(
        source="run_id", allow_null=True, help_text="null: the submission"
    )
    by = serializers.ChoiceField(choices=("an organiser", "the team"))
    why = serializers.CharField()


class SubmissionSerializer(serializers.ModelSerializer[Submission]):
    """A submission with its runs, its standing on the boards and what was done to it, and why."""

    team = serializers.CharField(source="team.name", read_only=True)
    challenge: serializers.SlugRelatedField[Challenge] = serializers.SlugRelatedField(
        slug_field="slug", read_only=True
    )
    runs = RunSerializer(many=True, read_only=True)
    evaluated_on = ChosenTaskSerializer(source="chosen_tasks", many=True, read_only=True)
    actions = serializers.SerializerMethodField()

    class Meta:
        model = Submission
        fields = (
            "id",
            "team",
            "challenge",
            "artifact_kind",
            "registry_ref",
            "image_digest",
            "method_name",
            "description",
            "paper_url",
            "code_url",
            "chosen_for_final",
            "is_baseline",
            "state",
            "failure_reason",
            "build_log",
            "consumes_quota",
            "standing",
            "created_at",
            "evaluated_on",
            "runs",
            "actions",
        )
        read_only_fields = fields

    @extend_schema_field(SeenActionSerializer(many=True))
    def get_actions(self, submission: Submission) -> list[dict[str, object]]:
        """Latest first: its team and its organisers read the same."""
        return [dict(SeenActionSerializer(seen).data) for seen in seen_by_team(submission)]


class SubmissionCreateSerializer(serializers.Serializer[dict[str, object]]):
    """A new submission: a file (multipart) or a registry reference, and the method's metadata."""

    challenge = serializers.SlugField(help_text="challenge slug")
    team = serializers.CharField(
        required=False, help_text="team name; may be left out when the user is in one team only"
    )
    artifact_kind = serializers.ChoiceField(choices=Submission.ArtifactKind.choices)
    artifact = serializers.FileField(
        required=False, help_text="image archive (docker save) or build context (tar, tar.gz)"
    )
    registry_ref = serializers.CharField(required=False, allow_blank=True, max_length=500)
    method_name = serializers.CharField(max_length=200)
    description = serializers.CharField(required=False, allow_blank=True)
    paper_url = serializers.URLField(required=False, allow_blank=True)
    code_url = serializers.URLField(required=False, allow_blank=True)
    is_baseline = serializers.BooleanField(default=False, help_text="organisers only")
    tasks = serializers.ListField(
        child=serializers.CharField(max_length=100),
        required=False,
        max_length=100,
        help_text="task ids to evaluate on; default: every task (naming only splits: theirs)",
    )
    splits = serializers.ListField(
        child=serializers.CharField(max_length=130),
        required=False,
        max_length=300,
        help_text="<task id>/<split kind>, for tasks whose splits are selectable; default: "
        "every split of a chosen task",
    )


class SubmissionFlagsSerializer(serializers.Serializer[dict[str, object]]):
    """Flags set after submitting: baseline (organisers), chosen for the final (the team)."""

    is_baseline = serializers.BooleanField(required=False)
    chosen_for_final = serializers.BooleanField(required=False)
