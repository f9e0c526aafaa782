"""The API's shapes of a leaderboard: its entries, metrics and statistics."""

from __future__ import annotations

from rest_framework import serializers

from evaluator.seam import Metric
from leaderboard.api.repeat_serializers import RepeatedEntrySerializer, RepeatStatisticsSerializer
from leaderboard.api.serializers import SplitSerializer


class CalibratedSerializer(serializers.Serializer[dict[str, object]]):
    """An entry's score calibrated by people's labels (``leaderboard.calibration``)."""

    value = serializers.FloatField()
    ci95 = serializers.ListField(child=serializers.FloatField())


class CalibrationSerializer(serializers.Serializer[dict[str, object]]):
    """The judge audit whose labels calibrate the board, and whether its scores rank it."""

    audit = serializers.IntegerField()
    judge_id = serializers.CharField()
    labels = serializers.IntegerField(help_text="the labels (people agreeing) it corrects with")
    ranks = serializers.BooleanField(help_text="the calibrated score ranks the board")


class FrozenSerializer(serializers.Serializer[dict[str, object]]):
    """The public board is frozen (``leaderboard.public_board``): it ranks only submissions
    made before ``since``, until the phase ends."""

    since = serializers.DateTimeField()
    until = serializers.DateTimeField()


class LadderSerializer(serializers.Serializer[dict[str, object]]):
    """The Ladder publishes the board's scores: a team's score only when it beats its best
    published one by more than ``threshold``, rounded to it."""

    threshold = serializers.FloatField()


class BoardStatisticsSerializer(serializers.Serializer[dict[str, object]]):
    """How the entries' rank intervals and groups were computed, and the split's minimum
    detectable effect (``leaderboard.board_statistics``); ``unavailable`` alone says why a
    board has none."""

    unavailable = serializers.CharField(required=False)
    units = serializers.IntegerField(required=False, help_text="units the bootstrap resamples")
    confidence = serializers.FloatField(required=False)
    alpha = serializers.FloatField(required=False, help_text="the groups' significance level")
    correction = serializers.CharField(
        required=False, help_text="the multiple-comparison correction of the groups' tests"
    )
    n_boot = serializers.IntegerField(required=False)
    power = serializers.FloatField(required=False)
    minimum_detectable_effect = serializers.FloatField(
        required=False,
        allow_null=True,
        help_text="the difference two entries of typical agreement must have to be told apart "
        "with this power, in the metric's units",
    )
    metric = serializers.CharField(required=False)
    calibration = CalibrationSerializer(required=False)
    frozen = FrozenSerializer(required=False)
    ladder = LadderSerializer(required=False)
    repeats = RepeatStatisticsSerializer(required=False)


class LeaderboardEntrySerializer(serializers.Serializer[dict[str, object]]):
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
    rank_ci95 = serializers.ListField(
        child=serializers.IntegerField(allow_null=True),
        help_text="the lowest and highest rank the entry takes in the central 95 % of a paired "
        "bootstrap over the split's units (null: a baseline, an incomplete result, or a board "
        "without them: the leaderboard's statistics say why)",
    )
    group = serializers.IntegerField(
        allow_null=True,
        help_text="entries the board cannot tell apart from the one above them share its "
        "group (paired tests, corrected for multiple comparisons)",
    )
    calibrated = CalibratedSerializer(
        allow_null=True,
        help_text="the primary score calibrated by the people's labels of the split's latest "
        "finished judge audit (null: none, or judged by another judge)",
    )
    repeated = RepeatedEntrySerializer(
        allow_null=True,
        help_text="its repeated runs (an organiser's repeat of the final entries); null: none",
    )
    metrics = serializers.DictField()
    derived = serializers.DictField(child=serializers.FloatField(allow_null=True))
    laddered = serializers.BooleanField(
        help_text="the Ladder publishes this entry (docs/public-board.md): ``primary`` is its "
        "team's released score, and nothing else of its scores is published"
    )


class MetricSerializer(serializers.Serializer[Metric]):
    """A metric as the task's benchmark declares it (``evaluator.benchmarks.base.Metric``)."""

    name = serializers.CharField()
    label = serializers.CharField()  # type: ignore[assignment]  # a field, popped by DRF's metaclass: not Field.label
    higher_is_better = serializers.BooleanField()
    scale = serializers.CharField()
    where = serializers.CharField()
    interval = serializers.BooleanField()
    headline = serializers.BooleanField()


class LeaderboardSerializer(serializers.Serializer[dict[str, object]]):
    """A split's leaderboard in ``setting``, one of its task's ``settings`` ("" for a task
    without any)."""

    split = SplitSerializer()
    setting = serializers.CharField(allow_blank=True)
    settings = serializers.ListField(child=serializers.CharField(allow_blank=True))
    protocol = serializers.CharField()  # the API key naming the benchmark
    primary_metric = serializers.CharField()
    entry_rule = serializers.CharField()
    metrics = MetricSerializer(many=True)
    statistics = BoardStatisticsSerializer()
    entries = LeaderboardEntrySerializer(many=True)
