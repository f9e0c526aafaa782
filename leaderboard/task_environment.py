"""What a task's agents can run on Podium, in one place: the challenge page, the starter kit
(its README and ``kit.json``) and the API (``GET /api/challenges/<slug>/``) show it, so a
participant knows before building what the upload check and the build will accept.

Per task: the models agents may load by hub id (``HubModel``, registered by ``manage.py
register_model``: the ids a kit declares in ``aicrowd.json``'s ``hf_models``), whether its runs
get a GPU and of which class (``Task.gpu_class``), the base images a Dockerfile may start from
(``PODIUM_BUILD_BASE_IMAGES``) and the package index builds reach (``Challenge.package_index``;
none: builds have no network).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.conf import settings

from leaderboard.models import Challenge, HubModel, Task

# A GPU class of this name gives its runs no GPU (its workers run with PODIUM_AGENT_GPUS=none);
# every other class gives each run one GPU of that class.
CPU_CLASS = "cpu"


@dataclass(frozen=True)
class TaskEnvironment:
    task_id: str
    models: tuple[tuple[str, str], ...]  # (hub id, revision), as a kit declares them
    gpu: bool
    gpu_class: str
    base_images: tuple[str, ...]
    package_index: str  # "": builds have no network

    @property
    def model_names(self) -> list[str]:
        """Each model as a kit names it: ``org/name``, with ``@revision`` unless ``main``."""
        return [hub_id + ("" if rev == "main" else f"@{rev}") for hub_id, rev in self.models]

    def as_dict(self) -> dict[str, Any]:
        return {
            "task_id": self.task_id,
            "models": [{"hub_id": hub_id, "revision": rev} for hub_id, rev in self.models],
            "gpu": self.gpu,
            "gpu_class": self.gpu_class,
            "base_images": list(self.base_images),
            "package_index": self.package_index or None,
        }


def task_environment(task: Task, models: list[HubModel] | None = None) -> TaskEnvironment:
    """``task``'s environment; ``models``: its challenge's ``HubModel`` rows, when already read."""
    challenge = task.challenge
    if models is None:
        models = list(challenge.hub_models.all())
    gpu_class = task.effective_gpu_class
    return TaskEnvironment(
        task_id=task.task_id,
        models=tuple((m.hub_id, m.revision) for m in models),
        gpu=gpu_class != CPU_CLASS,
        gpu_class=gpu_class,
        base_images=tuple(settings.PODIUM_BUILD_BASE_IMAGES),
        package_index=challenge.package_index,
    )


def environments(challenge: Challenge) -> list[TaskEnvironment]:
    """Each task's environment, in the tasks' order (``tasks`` and ``hub_models`` may be
    prefetched: no query then)."""
    models = list(challenge.hub_models.all())
    return [task_environment(task, models) for task in challenge.tasks.all()]
