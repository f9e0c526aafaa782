"""The API's shapes of repeated runs (``leaderboard.repeats``): the organisers' action on a split
and what a board says of each repeated entry."""

from __future__ import annotations

from rest_framework import serializers


class RepeatSerializer(serializers.Serializer[dict[str, object]]):
    """An organiser's "repeat the final entries" of a split."""

    why = serializers.CharField(help_text="the reason, kept in the log; the teams read it")


class RepeatedSerializer(serializers.Serializer[dict[str, object]]):
    """What "repeat the final entries" did."""

    runs_per_entry = serializers.IntegerField(help_text="k: the task's final_repeats")
    repeated = serializers.IntegerField(help_text="entries' submissions given runs")
    refused = serializers.ListField(
        child=serializers.CharField(), help_text="submissions given none, and why"
    )


class RepeatedEntrySerializer(serializers.Serializer[dict[str, object]]):
    """An entry's repeated runs: how many and how many are done; once all are done and have
    units, the mean of their primary scores, its 95 % interval with the variance between runs,
    the scores' standard deviation and pass^k (``evaluator.repeats``)."""

    runs = serializers.IntegerField(help_text="k: the entry's run and its repeats")
    done = serializers.IntegerField()
    units = serializers.IntegerField(required=False)
    mean = serializers.FloatField(required=False)
    low = serializers.FloatField(required=False)
    high = serializers.FloatField(required=False)
    sd = serializers.FloatField(required=False, help_text="standard deviation between runs")
    pass_k = serializers.FloatField(
        required=False,
        allow_null=True,
        help_text="share of units passed in all k runs (null: the benchmark has no pass)",
    )


class RepeatStatisticsSerializer(serializers.Serializer[dict[str, object]]):
    """How the repeated entries' statistics were computed, or why they are not."""

    unavailable = serializers.CharField(required=False)
    confidence = serializers.FloatField(required=False)
    n_boot = serializers.IntegerField(required=False)
    passing_unit = serializers.FloatField(required=False, allow_null=True)
    metric = serializers.CharField(required=False)
