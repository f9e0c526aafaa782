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
from workers.runtimes import RUNC, RUNSC


@dataclass(frozen=True)
class TaskEnvironment:
    task_id: str
    models: tuple[tuple[str, str], ...]  # (hub id, revision), as a kit declares them
    gpu: bool
    gpu_class: str
    runtime: str  # the task's agent runtime (workers.runtimes); "": Podium's default
    base_images: tuple[str, ...]
    package_index: str  # "": builds have no network

    @property
    def model_names(self) -> list[str]:
        """Each model as a kit names it: ``org/name``, with ``@revision`` unless ``main``."""
        return [hub_id + ("" if rev == "main" else f"@{rev}") for hub_id, rev in self.models]

    @property
    def runtime_text(self) -> str:
        """The runtime its agents run under, in a participant's words."""
        if self.runtime == RUNSC:
            return "gVisor (runsc): the agent talks to the gVisor kernel, never to the host kernel"
        if self.runtime == RUNC:
            why = " (GPU tasks keep runc until the nodes run a gVisor with its GPU proxy)"
            return "runc, with every hardening of Podium" + (why if self.gpu else "")
        return (
            "gVisor (runsc) where the node offers it, else runc with every hardening of "
            "Podium; the run page says which"
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "task_id": self.task_id,
            "models": [{"hub_id": hub_id, "revision": rev} for hub_id, rev in self.models],
            "gpu": self.gpu,
            "gpu_class": self.gpu_class,
            "runtime": self.runtime or None,
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
        gpu=task.gets_gpu,
        gpu_class=gpu_class,
        runtime=task.agent_runtime or (settings.PODIUM_GPU_RUNTIME if task.gets_gpu else ""),
        base_images=tuple(settings.PODIUM_BUILD_BASE_IMAGES),
        package_index=challenge.package_index,
    )


def environments(challenge: Challenge) -> list[TaskEnvironment]:
    """Each task's environment, in the tasks' order (``tasks`` and ``hub_models`` may be
    prefetched: no query then)."""
    models = list(challenge.hub_models.all())
    return [task_environment(task, models) for task in challenge.tasks.all()]
