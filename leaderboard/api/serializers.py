"""API shapes. Split bundles never appear: no serializer has a field for them."""

from __future__ import annotations

from rest_framework import serializers

from leaderboard.models import Challenge, EvaluationRun, Phase, Split, Submission, Task


class PhaseSerializer(serializers.ModelSerializer):
    class Meta:
        model = Phase
        fields = ("name", "starts_at", "ends_at")


class ChallengeSerializer(serializers.ModelSerializer):
    phases = PhaseSerializer(many=True, read_only=True)

    class Meta:
        model = Challenge
        fields = ("slug", "name", "description", "phases", "created_at")


class TaskSerializer(serializers.ModelSerializer):
    challenge = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    judge = serializers.CharField(source="judge_label", read_only=True)
    settings = serializers.DictField(source="effective_settings", read_only=True)

    class Meta:
        model = Task
        fields = (
            "id",
            "challenge",
            "task_id",
            "name",
            "description",
            "protocol",
            "readiness_s",
            "per_item_s",
            "max_batch_size",
            "total_wall_s",
            "timeout_policy",
            "error_policy",
            "image_search_enabled",
            "web_search_enabled",
            "judge",
            "settings",
            "primary_metric",
            "entry_rule",
            "quota_per_day",
            "quota_total",
            "quota_concurrent",
            "max_artifact_bytes",
        )


class SplitSerializer(serializers.ModelSerializer):
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
            "groups",
            "items",
            "visibility",
            "reveal_at",
            "revealed",
        )

    def get_revealed(self, split: Split) -> bool:
        return split.is_revealed()


class LeaderboardEntrySerializer(serializers.Serializer):
    """One entry, from ``ranking.Entry.record()``; ``metrics`` holds every metric of the run's
    headline block by name, as the split's ``metrics`` declare them; ``derived`` the scores
    across the submission's runs in every setting (Visual-RAG's ``gcue@<k>``; null where
    undefined; {} for a task without settings)."""

    rank = serializers.IntegerField(allow_null=True)
    team = serializers.CharField()
    method_name = serializers.CharField()
    is_baseline = serializers.BooleanField()
    paper_url = serializers.CharField()
    code_url = serializers.CharField()
    submission_id = serializers.IntegerField()
    run_id = serializers.IntegerField()
    submitted_at = serializers.CharField()
    judge_id = serializers.CharField()
    complete = serializers.BooleanField()
    count = serializers.IntegerField()
    primary = serializers.FloatField(allow_null=True)
    primary_ci95 = serializers.ListField(child=serializers.FloatField(allow_null=True))
    metrics = serializers.DictField()
    derived = serializers.DictField(child=serializers.FloatField(allow_null=True))


class MetricSerializer(serializers.Serializer):
    """A metric as the task's protocol declares it (``evaluator.protocols.base.Metric``)."""

    name = serializers.CharField()
    label = serializers.CharField()
    higher_is_better = serializers.BooleanField()
    scale = serializers.CharField()
    where = serializers.CharField()
    interval = serializers.BooleanField()
    headline = serializers.BooleanField()


class LeaderboardSerializer(serializers.Serializer):
    """A split's leaderboard in ``setting``, one of its task's ``settings`` ("" for a task
    without any)."""

    split = SplitSerializer()
    setting = serializers.CharField(allow_blank=True)
    settings = serializers.ListField(child=serializers.CharField(allow_blank=True))
    protocol = serializers.CharField()
    primary_metric = serializers.CharField()
    entry_rule = serializers.CharField()
    metrics = MetricSerializer(many=True)
    entries = LeaderboardEntrySerializer(many=True)


class RunSerializer(serializers.ModelSerializer):
    task_id = serializers.CharField(source="task.task_id", read_only=True)
    split_kind = serializers.CharField(source="split.kind", read_only=True)
    progress = serializers.FloatField(read_only=True, allow_null=True)

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
        )


class SubmissionSerializer(serializers.ModelSerializer):
    team = serializers.CharField(source="team.name", read_only=True)
    challenge = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    runs = RunSerializer(many=True, read_only=True)

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
            "created_at",
            "runs",
        )
        read_only_fields = fields


class SubmissionCreateSerializer(serializers.Serializer):
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


class SubmissionFlagsSerializer(serializers.Serializer):
    """Flags set after submitting: baseline (organisers), chosen for the final (the team)."""

    is_baseline = serializers.BooleanField(required=False)
    chosen_for_final = serializers.BooleanField(required=False)
