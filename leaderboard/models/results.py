"""What a run produces: per-turn answers and verdicts, per-slice scores, paired comparisons,
and the judgment cache's audit trail."""

from __future__ import annotations

from collections.abc import Mapping

from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.utils import timezone

from leaderboard.models.split import Split
from leaderboard.models.submission import EvaluationRun

# The slice row holding a run's headline block.
ALL = ("all", "all")


class ItemAnswer(models.Model):
    """An agent's answer to one item, stored once, the moment it arrives: ``item_key`` is the
    benchmark's key for it (CRAG-MM: the interaction id; Visual-RAG: ``<setting>/<query id>``),
    ``group`` and ``position`` where the item sits (``AgentPlan.place``: a CRAG-MM session and
    turn, a Visual-RAG setting and query index); ``response`` as the benchmark stores it
    (``Benchmark.stored_prediction`` reads it back)."""

    class Outcome(models.TextChoices):
        ANSWERED = "answered", "answered"
        TIMEOUT = "timeout", "timed out"
        ERROR = "error", "error"
        INVALID = "invalid", "broke the protocol"

    run = models.ForeignKey(EvaluationRun, on_delete=models.CASCADE, related_name="answers")
    group = models.CharField(max_length=200)
    item_key = models.CharField(max_length=200)
    position = models.PositiveIntegerField()
    response = models.TextField(blank=True)
    outcome = models.CharField(max_length=16, choices=Outcome, default=Outcome.ANSWERED)
    problem = models.CharField(
        max_length=500, blank=True, help_text="an invalid reply: what was wrong (Podium's words)"
    )
    latency_s = models.FloatField(null=True, blank=True)
    thumbnail = models.CharField(
        max_length=300,
        blank=True,
        help_text="the item's image scaled down, in storage (leaderboard.pipeline.thumbnails)",
    )
    images = models.JSONField(
        default=dict,
        blank=True,
        help_text="the images the answer places in its text, by index: their scaled copies in "
        "storage (M2RAG; leaderboard.pipeline.thumbnails)",
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ("run", "group", "position")
        constraints = (
            models.UniqueConstraint(fields=["run", "item_key"], name="answer_once_per_item"),
        )

    def __str__(self) -> str:
        return f"{self.item_key} ({self.outcome})"


class ItemVerdict(models.Model):
    """An answer's grade, in its benchmark's words (CRAG-MM: correct / missing / hallucinated;
    Visual-RAG: a score or no_answer), and ``detail``: the benchmark's per-item row
    (``Benchmark.to_row``), from which aggregation rebuilds the graded item
    (``Benchmark.from_row``)."""

    answer = models.OneToOneField(ItemAnswer, on_delete=models.CASCADE, related_name="verdict")
    verdict = models.CharField(max_length=32)
    detail = models.JSONField(default=dict)
    judge_id = models.CharField(max_length=200)
    prompt_version = models.CharField(max_length=64, blank=True)
    prompt_hash = models.CharField(max_length=64, blank=True)
    judged_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"{self.answer}: {self.verdict}"


class ScoreRow(models.Model):
    """A metric block as stored: ``count`` items behind it, every metric in ``metrics``, and the
    task's primary metric (with its interval) in columns, for ranking."""

    count = models.PositiveIntegerField()
    primary = models.FloatField(null=True)
    primary_ci_low = models.FloatField(null=True)
    primary_ci_high = models.FloatField(null=True)
    metrics = models.JSONField(default=dict)

    class Meta:
        abstract = True

    def set_primary(self, name: str) -> None:
        """Take the primary metric ``name`` (and its interval) from ``metrics``."""
        self.primary = primary_value(self.metrics, name)
        ci = self.metrics.get(f"{name}_ci95") or (None, None)
        self.primary_ci_low, self.primary_ci_high = ci


class SliceScore(ScoreRow):
    """A run's metric block for one slice value (``all``/``all`` is the whole run), as its
    benchmark gives it (``Benchmark.score_blocks``)."""

    run = models.ForeignKey(EvaluationRun, on_delete=models.CASCADE, related_name="slice_scores")
    dimension = models.CharField(max_length=100)
    value = models.CharField(max_length=200)

    class Meta:
        ordering = ("run", "dimension", "value")
        constraints = (
            models.UniqueConstraint(fields=["run", "dimension", "value"], name="slice_score_once"),
        )
        indexes = (
            models.Index(fields=["dimension", "value", "-primary"], name="slice_score_ranking"),
        )

    def __str__(self) -> str:
        return f"run #{self.run_id} {self.dimension}={self.value}"


class Headline(ScoreRow):
    """A run's whole-run block (its ``all``/``all`` SliceScore row), copied when its scores are
    stored, with the slice dimensions it has: what the leaderboard reads. The split's runs'
    headlines lie together, so a board reads a few pages, not one page per run among their
    slice rows. Written only with the run's SliceScore rows (``scores.store_scores``,
    ``scores.drop_scores``, ``Task.save``'s re-ranking)."""

    run = models.OneToOneField(
        EvaluationRun, on_delete=models.CASCADE, primary_key=True, related_name="headline"
    )
    # indexed by ``headline_board``, which starts with it
    split = models.ForeignKey(Split, on_delete=models.CASCADE, related_name="+", db_index=False)
    setting = models.CharField(max_length=32, blank=True)
    dimensions = ArrayField(models.CharField(max_length=100), default=list)  # stored, sorted

    class Meta:
        # covering: the ranking reads a split's runs, primary values and slice dimensions from
        # the index alone
        indexes = (
            models.Index(
                fields=["split", "setting"],
                include=["run", "primary", "dimensions"],
                name="headline_board",
            ),
        )

    def __str__(self) -> str:
        return f"run #{self.run_id} headline"


class RankedBoard(models.Model):
    """A split's leaderboard in one setting, ranked when the split's results changed
    (``leaderboard.board_store``, in the transaction of the change): its entries' runs in the
    board's order, their ranks (None: a baseline), and the slice dimensions and judges behind
    them. One row: what a board page reads instead of ranking 5,000 runs."""

    split = models.ForeignKey(Split, on_delete=models.CASCADE, related_name="+", db_index=False)
    setting = models.CharField(max_length=32, blank=True)
    runs = ArrayField(models.BigIntegerField(), default=list)
    ranks = ArrayField(models.PositiveIntegerField(null=True), default=list)
    dimensions = ArrayField(models.CharField(max_length=100), default=list)
    judges = ArrayField(models.CharField(max_length=200), default=list)
    # beside each entry (None: a baseline, an incomplete result, or a board without units):
    # its rank interval and group (``leaderboard.board_statistics``)
    rank_low = ArrayField(models.PositiveIntegerField(null=True), default=list)
    rank_high = ArrayField(models.PositiveIntegerField(null=True), default=list)
    groups = ArrayField(models.PositiveIntegerField(null=True), default=list)
    statistics = models.JSONField(default=dict)  # how they were computed; the split's MDE
    # per entry: its score calibrated by a finished judge audit, [value, low, high] or None
    calibrated = models.JSONField(default=list)
    # per entry: what the Ladder published of its score on a public test (the value teams
    # see, ``leaderboard.public_board``) or None where every score is published
    released = models.JSONField(default=list)
    # per entry: its repeated runs' mean, interval with the variance between runs, and
    # pass^k (``leaderboard.repeats``), or None where it was not repeated
    repeated = models.JSONField(default=list)

    class Meta:
        constraints = (
            models.UniqueConstraint(fields=["split", "setting"], name="ranked_board_once"),
        )

    def __str__(self) -> str:
        return f"{self.split_id} [{self.setting}]: {len(self.runs)} entries"


def primary_value(metrics: Mapping[str, object], name: str) -> float | None:
    value = metrics.get(name)
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


class EntryComparison(models.Model):
    """A paired comparison of two runs on the same split, stored when results are aggregated.

    ``difference`` is run_a minus run_b in the primary metric, with its 95 % interval.
    """

    split = models.ForeignKey(Split, on_delete=models.CASCADE, related_name="comparisons")
    run_a = models.ForeignKey(EvaluationRun, on_delete=models.CASCADE, related_name="+")
    run_b = models.ForeignKey(EvaluationRun, on_delete=models.CASCADE, related_name="+")
    metric = models.CharField(max_length=32, default="truthfulness")
    difference = models.FloatField()
    ci_low = models.FloatField()
    ci_high = models.FloatField()
    separable = models.BooleanField()
    p_value = models.FloatField(null=True)
    detail = models.JSONField(default=dict)
    computed_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = (
            models.UniqueConstraint(fields=["run_a", "run_b"], name="comparison_once_per_pair"),
            models.CheckConstraint(
                condition=models.Q(run_a__lt=models.F("run_b")), name="comparison_ordered_pair"
            ),
        )

    def __str__(self) -> str:
        return f"run #{self.run_a_id} vs run #{self.run_b_id}"


class JudgmentRecord(models.Model):
    """One cached judge decision (never an unjudged one): the audit trail of verdicts."""

    key = models.CharField(max_length=128, unique=True)
    # a grade, or what a reply was read into (MRAG-Suite: claims as JSON; M2RAG: statements)
    verdict = models.TextField()
    judge_id = models.CharField(max_length=200)
    prompt_version = models.CharField(max_length=64)
    prompt_hash = models.CharField(max_length=64)
    raw = models.TextField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = (models.Index(fields=["judge_id", "prompt_version"]),)

    def __str__(self) -> str:
        return f"{self.key[:12]}: {self.verdict} ({self.judge_id})"


class AnswerSimilarity(models.Model):
    """Two done runs of different teams on the same split and setting whose answers are
    near-identical (``leaderboard.duplicates``): of ``items`` answered by both (abstentions left
    out), ``alike`` are the same after normalising or nearly so. Kept only when flagged."""

    split = models.ForeignKey(Split, on_delete=models.CASCADE, related_name="similarities")
    run_a = models.ForeignKey(EvaluationRun, on_delete=models.CASCADE, related_name="+")
    run_b = models.ForeignKey(EvaluationRun, on_delete=models.CASCADE, related_name="+")
    items = models.PositiveIntegerField()
    alike = models.PositiveIntegerField()
    share = models.FloatField()
    computed_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ("-share",)
        constraints = (
            models.UniqueConstraint(fields=["run_a", "run_b"], name="similarity_once_per_pair"),
            models.CheckConstraint(
                condition=models.Q(run_a__lt=models.F("run_b")), name="similarity_ordered_pair"
            ),
        )

    def __str__(self) -> str:
        return f"run #{self.run_a_id} ~ run #{self.run_b_id}: {self.share:.0%}"
