"""Which judge grades a run: the task's as configured now, or one an organiser chose when
re-judging (``leaderboard.run_actions.rejudge``), kept on the run (``judge_choice``).

The judges on offer are those Podium is configured with: the rules judge, the model of every
endpoint in ``PODIUM_JUDGE_ENDPOINTS``, and the judge each of the challenge's tasks names.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass

from django.conf import settings

from leaderboard.models import EvaluationRun, Task

RULES = "rules"
OPENAI = "openai"


class UnknownJudge(ValueError):
    """A judge that is not on offer; the message names the ones that are."""


@dataclass(frozen=True)
class JudgeSpec:
    """A judge as a task names one: its kind, and for a model its endpoint, model, revision."""

    kind: str
    endpoint: str = ""
    model: str = ""
    revision: str = ""

    @classmethod
    def of_task(cls, task: Task) -> JudgeSpec:
        if task.judge_kind == Task.JudgeKind.RULES:
            return cls(RULES)
        endpoint = settings.PODIUM_JUDGE_ENDPOINTS.get(task.judge_endpoint, {})
        model = task.judge_model or endpoint.get("model", "")
        return cls(OPENAI, task.judge_endpoint, model, task.judge_revision)

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> JudgeSpec:
        return cls(
            **{name: str(data.get(name, "")) for name in ("kind", "endpoint", "model", "revision")}
        )

    def to_dict(self) -> dict[str, str]:
        return asdict(self)

    @property
    def key(self) -> str:
        """What a form sends for this judge."""
        return "|".join((self.kind, self.endpoint, self.model, self.revision))

    @property
    def label(self) -> str:
        """As pages name it: ``rules``, or ``openai:<model>[@revision] (endpoint <name>)``."""
        if self.kind == RULES:
            return RULES
        revision = f"@{self.revision}" if self.revision else ""
        return f"openai:{self.model}{revision} (endpoint {self.endpoint})"


def judge_spec(run: EvaluationRun) -> JudgeSpec:
    """The spec of the judge that grades ``run`` (``judge_for_run`` builds it): the one chosen
    for it, else its task's."""
    return (
        JudgeSpec.from_dict(run.judge_choice) if run.judge_choice else JudgeSpec.of_task(run.task)
    )


def judge_options(tasks: Iterable[Task]) -> list[JudgeSpec]:
    """Every judge on offer for runs of ``tasks``: the rules judge, each endpoint's model, and
    each task's judge (which may name another model or a revision), each once."""
    options = [JudgeSpec(RULES)]
    options += [
        JudgeSpec(OPENAI, name, endpoint["model"])
        for name, endpoint in sorted(settings.PODIUM_JUDGE_ENDPOINTS.items())
        if endpoint.get("model")
    ]
    options += [JudgeSpec.of_task(task) for task in tasks]
    return list(dict.fromkeys(options))


def chosen_judge(key: str, tasks: Iterable[Task]) -> JudgeSpec | None:
    """The judge a form's ``key`` names (None for "" : each run's task judge as configured
    now); ``UnknownJudge`` when it is not on offer."""
    if not key:
        return None
    options = judge_options(tasks)
    for option in options:
        if option.key == key:
            return option
    offered = ", ".join(option.label for option in options)
    raise UnknownJudge(f"no judge {key!r} is configured; on offer: {offered}")
