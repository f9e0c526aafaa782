"""What organisers publish: a challenge, its phases, its tasks and each task's splits."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Protocol

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator
from django.db import models
from django.utils import timezone

from agentkit.protocol import MAX_BATCH_SIZE, MIN_BATCH_SIZE
from evaluator import benchmarks
from evaluator.benchmarks import benchmark_class, get_benchmark
from evaluator.records import EvaluatorError
from evaluator.seam import SomeBenchmark
from workers.package_index import IndexURLError, PackageIndex


def _package_index_url(value: str) -> None:
    """One http(s) URL without credentials (``PackageIndex.parse``), and nothing after it: no
    space, line break or control character (``URL --extra-index-url ...``)."""
    if any(c.isspace() or not c.isprintable() for c in value.strip()):
        raise ValidationError(
            "a package index is one URL: no spaces, line breaks or control characters in it"
        )
    try:
        PackageIndex.parse(value)
    except IndexURLError as exc:
        raise ValidationError(str(exc)) from None


class Challenge(models.Model):
    name = models.CharField(max_length=200)
    slug = models.SlugField(max_length=100, unique=True)
    description = models.TextField(blank=True)
    organisers = models.ManyToManyField(
        settings.AUTH_USER_MODEL, blank=True, related_name="organised_challenges"
    )
    is_published = models.BooleanField(
        default=False,
        help_text="A draft (unpublished) challenge is shown to its organisers only; it is "
        "published by the admin's Publish action once its checklist passes "
        "(leaderboard.publishing).",
    )
    package_index = models.CharField(
        max_length=500,
        blank=True,
        validators=[_package_index_url],
        help_text="A PyPI mirror (pip's --index-url, e.g. https://pypi.example.org/simple/) that "
        "teams' builds may install from: their build steps reach this host and no other. "
        "Empty: builds have no network and ship their wheels. Agents never have a network.",
    )
    # The challenge's pages, in Markdown (shown sanitised, leaderboard.pages); participants
    # accept the rules before their first submission, and again when they change.
    overview = models.TextField(blank=True, help_text="Markdown: what the challenge is")
    rules = models.TextField(
        blank=True,
        help_text="Markdown: rules and terms; when set, each participant accepts them before "
        "submitting (again whenever they change)",
    )
    evaluation = models.TextField(blank=True, help_text="Markdown: how entries are scored")
    data = models.TextField(blank=True, help_text="Markdown: the data and what may be downloaded")
    participate = models.TextField(
        blank=True, help_text="Markdown: how to package and submit an agent, step by step"
    )
    kit_includes_corpus = models.BooleanField(
        default=False,
        help_text="The starter kit carries the challenge's search corpus (participants may "
        "then search it offline). Off: the kit has the public splits and no corpus.",
    )
    logo = models.FileField(
        upload_to="logos/",
        max_length=500,
        blank=True,
        help_text="A raster image (PNG, JPEG or WebP) shown on the challenge's page and in the "
        "list of challenges; set from a bundle's challenge.logo (leaderboard.challenge_bundle).",
    )
    logo_sha256 = models.CharField(max_length=64, blank=True, editable=False)
    registration_approval = models.BooleanField(
        default=False,
        help_text="A team submits once an organiser approved its registration "
        "(leaderboard.participation); off: every team may submit.",
    )
    overall = models.JSONField(
        default=dict,
        blank=True,
        help_text="The overall ranking across the challenge's tasks, as challenge.yaml's "
        "overall section declares it (leaderboard.overall); empty: none. Set by the bundle.",
    )
    # What a public test's boards show while a phase runs (leaderboard.public_board): both
    # keep teams from fitting their agents to the public split's items.
    freeze_days = models.PositiveSmallIntegerField(
        null=True,
        blank=True,
        help_text="The public-test boards freeze for the last N days of each phase: they show "
        "what was submitted before, and teams see no public-test score of a submission made "
        "since, until the phase ends. Empty: never frozen.",
    )
    ladder_threshold = models.FloatField(
        null=True,
        blank=True,
        help_text="The Ladder (Blum and Hardt, 2015) on public tests: a team's public-test "
        "score is published only when it beats the team's best published score by more than "
        "this many points of the primary metric, rounded to it; else the best stays. Empty: "
        "every score is published.",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ("-created_at",)

    def build_index(self) -> PackageIndex | None:
        """The package index teams' builds reach, if the challenge names one."""
        return PackageIndex.parse(self.package_index) if self.package_index else None

    def __str__(self) -> str:
        return self.name


class Phase(models.Model):
    """A period of a challenge (e.g. "Phase 1", "Final"); submissions are dated against it.
    Its quotas apply, per team and task, to the submissions made during it, beside the task's
    own (``leaderboard.quotas``: the tighter wins)."""

    challenge = models.ForeignKey(Challenge, on_delete=models.CASCADE, related_name="phases")
    name = models.CharField(max_length=100)
    starts_at = models.DateTimeField()
    ends_at = models.DateTimeField()
    quota_per_day = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="Submissions per team and task in 24 hours during this phase; empty: the "
        "task's own quota alone",
    )
    quota_total = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="Submissions per team and task during this phase; empty: the task's own "
        "quota alone",
    )

    class Meta:
        ordering = ("challenge", "starts_at")
        constraints = (
            models.UniqueConstraint(fields=["challenge", "name"], name="phase_unique_name"),
            models.CheckConstraint(
                condition=models.Q(ends_at__gt=models.F("starts_at")), name="phase_ends_after_start"
            ),
        )

    def __str__(self) -> str:
        return f"{self.challenge.slug}: {self.name}"

    def is_open(self, now: datetime | None = None) -> bool:
        now = now or timezone.now()
        return self.starts_at <= now < self.ends_at


# A task's limits, the one list (each a ``Task`` field of that name). ``RUN_LIMITS`` bound the
# agent's run, each a field of the runner's ``workers.limits.Limits`` of the same name
# (``leaderboard.pipeline.run.limits_for``); ``TASK_LIMITS`` add what bounds a submission's upload
# and places its run: the keys of a task's ``limits:`` in challenge.yaml, in this order
# (``challenge_bundle.schema``). ``RUN_POLICIES`` say what a timed-out or failing batch does.
# The admin's "Limits" fieldset and the API's task fields list them from here.
RUN_LIMITS = ("readiness_s", "per_item_s", "max_batch_size", "total_wall_s")
TASK_LIMITS = (*RUN_LIMITS, "max_artifact_bytes", "gpu_class")
RUN_POLICIES = ("timeout_policy", "error_policy")
# A GPU class of this name gives its runs no GPU (its workers run with PODIUM_AGENT_GPUS=none);
# every other class gives each run one GPU of that class.
CPU_CLASS = "cpu"


class AgentRuntime(models.TextChoices):
    """What ``Task.agent_runtime`` may name: one of ``workers.runtimes.RUNTIMES``."""

    RUNSC = "runsc", "runsc (gVisor: the agent talks to gVisor's kernel, not the host's)"
    RUNC = "runc", "runc (the host's kernel, with Podium's hardening)"


class Task(models.Model):
    """One task of a challenge, e.g. CRAG-MM ``multi-turn-qa``, with its limits and judge."""

    class JudgeKind(models.TextChoices):
        RULES = "rules", "rules (deterministic, no model)"
        OPENAI = "openai", "OpenAI-compatible LLM endpoint"

    class TimeoutPolicy(models.TextChoices):
        MISSING = "missing", "a timed-out turn is scored missing"
        FAIL_RUN = "fail-run", "a time-out fails the run"

    class ErrorPolicy(models.TextChoices):
        ABORT = "abort", "an agent error fails the run (as the official evaluation)"
        CONTINUE = "continue", "an agent error scores its batch missing; the run goes on"

    class EntryRule(models.TextChoices):
        BEST = "best", "best entry of each team"
        LATEST = "latest", "latest entry of each team"
        CHOSEN = "chosen", "entry chosen for final (else best)"

    class TieRule(models.TextChoices):
        SHARED = "shared", "equal scores share a rank"
        EARLIER = "earlier", "equal scores: the earlier submission ranks first"

    class RankedBy(models.TextChoices):
        JUDGE = "judge", "the judge's score"
        CALIBRATED = "calibrated", "the judge's score calibrated by a finished audit's labels"

    # ``evaluator.board_stats.CORRECTIONS``: how a board's paired tests are adjusted together
    class MultipleComparisons(models.TextChoices):
        HOLM = "holm", "Holm's step-down"
        BONFERRONI = "bonferroni", "Bonferroni"
        NONE = "none", "none (each test at the board's level alone)"

    challenge = models.ForeignKey(Challenge, on_delete=models.CASCADE, related_name="tasks")
    task_id = models.SlugField(max_length=100, help_text='e.g. "multi-turn-qa"')
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    # One of the registry's benchmarks (``evaluator.benchmarks``), checked against it: a new
    # benchmark needs no migration.
    benchmark = models.CharField(
        max_length=32, choices=benchmarks.choices, default=benchmarks.DEFAULT
    )
    order = models.PositiveSmallIntegerField(default=0)
    # limits (``RUN_LIMITS``, ``TASK_LIMITS`` above)
    readiness_s = models.PositiveIntegerField(default=600, validators=[MinValueValidator(1)])
    per_item_s = models.FloatField(default=10.0, validators=[MinValueValidator(0.1)])
    max_batch_size = models.PositiveSmallIntegerField(
        default=MAX_BATCH_SIZE, validators=[MinValueValidator(MIN_BATCH_SIZE)]
    )
    total_wall_s = models.PositiveIntegerField(default=6 * 3600, validators=[MinValueValidator(1)])
    image_search_enabled = models.BooleanField(default=True)
    web_search_enabled = models.BooleanField(default=True)
    gpu_class = models.CharField(max_length=32, blank=True, help_text="blank: the default class")
    agent_runtime = models.CharField(
        max_length=16,
        blank=True,
        choices=AgentRuntime,
        help_text="the OCI runtime its agents run under; blank: Podium's default (gVisor where "
        "the node's engine offers it; runc for GPU tasks unless PODIUM_GPU_RUNTIME says runsc)",
    )
    # judging and scoring
    judge_kind = models.CharField(max_length=16, choices=JudgeKind, default=JudgeKind.RULES)
    judge_model = models.CharField(max_length=200, blank=True)
    judge_revision = models.CharField(max_length=100, blank=True)
    judge_endpoint = models.CharField(
        max_length=64, default="default", help_text="a name in PODIUM_JUDGE_ENDPOINTS"
    )
    # The judge of the prompts carrying images (M2RAG's image prompts): an endpoint whose model
    # sees images; its entry's model. Blank: none (an LLM-judged M2RAG task is not published).
    vision_judge_endpoint = models.CharField(
        max_length=64,
        blank=True,
        help_text="a name in PODIUM_JUDGE_ENDPOINTS whose model sees images: judges the prompts "
        "that carry images (M2RAG); blank: none",
    )
    # The benchmark's own settings (``Benchmark.settings_schema``: CRAG-MM's counting and missing
    # rule, Visual-RAG's evaluated settings...), checked by ``clean``; {} means its defaults.
    settings = models.JSONField(default=dict, blank=True)
    timeout_policy = models.CharField(
        max_length=16, choices=TimeoutPolicy, default=TimeoutPolicy.MISSING
    )
    error_policy = models.CharField(max_length=16, choices=ErrorPolicy, default=ErrorPolicy.ABORT)
    # One of the benchmark's metrics (``Benchmark.metrics``): it ranks the entries.
    primary_metric = models.CharField(max_length=64, default="truthfulness")
    entry_rule = models.CharField(max_length=16, choices=EntryRule, default=EntryRule.BEST)
    tie_rule = models.CharField(max_length=16, choices=TieRule, default=TieRule.SHARED)
    ranked_by = models.CharField(
        max_length=16,
        choices=RankedBy,
        default=RankedBy.JUDGE,
        help_text="which score ranks the boards: the judge's, or the judge's calibrated by the "
        "people's labels of the split's latest finished judge audit, where it has one "
        "(docs/board-statistics.md)",
    )
    multiple_comparisons = models.CharField(
        max_length=16,
        choices=MultipleComparisons,
        default=MultipleComparisons.HOLM,
        help_text="how the paired tests that draw a board's groups are corrected for being made "
        "together (docs/board-statistics.md)",
    )
    final_repeats = models.PositiveSmallIntegerField(
        default=1,
        validators=[MinValueValidator(1)],
        help_text="k: how many runs of each final entry an organiser's \"repeat the final "
        'entries" makes on a split (its own and k - 1 more); the board then shows their mean, '
        "an interval with the variance between runs, and pass^k (leaderboard.repeats).",
    )
    # quotas per team (blank: unlimited)
    quota_per_day = models.PositiveIntegerField(null=True, blank=True, default=5)
    quota_total = models.PositiveIntegerField(null=True, blank=True)
    quota_concurrent = models.PositiveIntegerField(null=True, blank=True, default=1)
    quota_back_on_cancel = models.BooleanField(
        default=False,
        help_text="a submission whose runs its team cancelled counts against no quota "
        "(off: it counts, as a failure of the team's own does)",
    )
    max_artifact_bytes = models.PositiveBigIntegerField(
        default=20 * 1024**3,
        validators=[MinValueValidator(1)],
        help_text="largest image archive or build context a team may upload",
    )
    splits_selectable = models.BooleanField(
        default=False,
        help_text="teams may choose which of this task's splits a submission is evaluated on "
        "(off: every split of a chosen task)",
    )

    class Meta:
        ordering = ("challenge", "order", "task_id")
        constraints = (
            models.UniqueConstraint(fields=["challenge", "task_id"], name="task_unique_id"),
        )

    def __str__(self) -> str:
        return f"{self.challenge.slug}/{self.task_id}"

    @property
    def effective_gpu_class(self) -> str:
        return self.gpu_class or settings.PODIUM_DEFAULT_GPU_CLASS

    @property
    def gets_gpu(self) -> bool:
        """Whether its runs get a GPU: every class but ``CPU_CLASS``."""
        return self.effective_gpu_class != CPU_CLASS

    def clean(self) -> None:
        if not benchmarks.is_known(self.benchmark):  # the field's own check names it
            raise ValidationError({"benchmark": f"{self.benchmark!r}: no such benchmark"})
        errors = {}
        gpu_runsc = settings.PODIUM_GPU_RUNTIME == AgentRuntime.RUNSC
        if self.agent_runtime == AgentRuntime.RUNSC and self.gets_gpu and not gpu_runsc:
            errors["agent_runtime"] = (
                f"GPU tasks (class {self.effective_gpu_class!r}) run under runc on this install: "
                "Debian's runsc predates gVisor's GPU proxy; an operator with a current gVisor "
                "sets PODIUM_GPU_RUNTIME=runsc (docs/deploy.md, 'Agent runtime')"
            )
        if self.gpu_class and self.gpu_class not in settings.PODIUM_GPU_CLASSES:
            errors["gpu_class"] = (
                f"unknown GPU class {self.gpu_class!r}; configured: "
                f"{', '.join(settings.PODIUM_GPU_CLASSES)}"
            )
        try:
            self.declared().check_settings(self.settings)
        except EvaluatorError as exc:
            errors["settings"] = str(exc)
        if not self.declared().searches:
            for name in ("image_search_enabled", "web_search_enabled"):
                if getattr(self, name):
                    errors[name] = (
                        f"{self.declared().title} agents have no search service: turn it off"
                    )
        elif not self.declared().search_corpus and self.web_search_enabled:
            errors["web_search_enabled"] = (
                f"{self.declared().title} agents search only their items' candidate images "
                "(image search): turn web search off"
            )
        problem = self.primary_metric_problem()
        if problem:
            errors["primary_metric"] = problem
        if self.max_batch_size > MAX_BATCH_SIZE:
            errors["max_batch_size"] = f"at most {MAX_BATCH_SIZE}"
        if self.judge_kind == self.JudgeKind.OPENAI:
            if not self.judge_model:
                errors["judge_model"] = "an OpenAI-compatible judge needs a model name"
            if self.judge_endpoint not in settings.PODIUM_JUDGE_ENDPOINTS:
                known = ", ".join(settings.PODIUM_JUDGE_ENDPOINTS) or "none configured"
                errors["judge_endpoint"] = (
                    f"unknown judge endpoint {self.judge_endpoint!r} ({known})"
                )
        if vision_problem := self.vision_endpoint_problem():
            errors["vision_judge_endpoint"] = vision_problem
        if errors:
            raise ValidationError(errors)

    def primary_metric_problem(self) -> str:
        """Why ``primary_metric`` cannot rank this task's entries ("" when it can): it must be
        one of the metrics each run is scored on with the task's settings
        (``Benchmark.ranking_metrics``)."""
        try:
            benchmark = self.scoring()
        except EvaluatorError:
            benchmark = self.declared()  # the settings' own error is reported beside
        name = self.primary_metric
        ranking = [m.name for m in benchmark.ranking_metrics()]
        if name in ranking:
            return ""
        choices = f"choose one of {', '.join(ranking)}"
        declared = next((m for m in benchmark.metrics if m.name == name), None)
        if declared is None:
            return f"{name!r} is not a metric of {self.benchmark}: {choices}"
        if declared.scale == "count":
            return f"{name!r} ({declared.label}) is a count, it cannot rank entries: {choices}"
        return (
            f"{name!r} ({declared.label}) is not a score of each run with these settings (it "
            f"is computed across a submission's runs, or in other settings): {choices}"
        )

    def vision_endpoint_problem(self) -> str | None:
        """What is wrong with the vision judge endpoint the task names (None: nothing, or none
        named)."""
        name = self.vision_judge_endpoint
        if not name:
            return None
        endpoint = settings.PODIUM_JUDGE_ENDPOINTS.get(name)
        if endpoint is None:
            known = ", ".join(settings.PODIUM_JUDGE_ENDPOINTS) or "none configured"
            return f"unknown judge endpoint {name!r} ({known})"
        if not self.declared().image_prompts:
            return f"{self.declared().title} sends no image to its judge: leave this blank"
        if not endpoint.get("model"):
            return f"judge endpoint {name!r} names no model (PODIUM_JUDGE_ENDPOINTS)"
        return None

    def declared(self) -> SomeBenchmark:
        """The task's benchmark: its metrics, primary metric, how its scores are stored."""
        return get_benchmark(self.benchmark)

    @property
    def effective_settings(self) -> dict[str, Any]:
        """The task's benchmark settings with the benchmark's defaults filled in."""
        try:
            return self.declared().check_settings(self.settings)
        except EvaluatorError:
            return dict(self.settings)

    def scoring(self) -> SomeBenchmark:
        """The task's benchmark with the task's settings (what grades and scores its runs)."""
        return benchmark_class(self.benchmark).from_settings(self.settings)

    def run_settings(self) -> tuple[str, ...]:
        """The settings each submission is run in on each split, one run each (``("",)`` for
        a benchmark without settings)."""
        return self.scoring().run_settings()

    @property
    def judge_label(self) -> str:
        """How the judge is named on pages, e.g. ``rules`` or ``openai:gpt-4o@2024-08-06``."""
        if self.judge_kind == self.JudgeKind.RULES:
            return "rules"
        revision = f"@{self.judge_revision}" if self.judge_revision else ""
        return f"openai:{self.judge_model}{revision}"


class _SplitFile(Protocol):
    """What names a split's bundle file: a ``Split`` (not imported: it imports this module)."""

    task: Task
    kind: str
    sha256: str


def split_bundle_path(split: _SplitFile, filename: str) -> str:
    task = split.task
    return (
        f"splits/{task.challenge.slug}/{task.task_id}/{split.kind}/{split.sha256 or filename}.tar"
    )
