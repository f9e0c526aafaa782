"""Setting up the demo challenge the way an organiser and teams would, reusing what exists.

The data is ``evaluator.protocols.crag_mm.sample.write_sample``'s: the three CRAG-MM tasks,
each with validation, public-test and private-test splits (imported with
``import_split_dir``), and the search corpus.
Each example agent is submitted by its own team as a build context through ``submit``, the web
form's code path. Nothing is created twice: a second demo finds the challenge, splits, teams
and submissions of the first.
"""

from __future__ import annotations

import io
import tarfile
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone

from agentkit.protocol import TASKS
from evaluator.protocols.crag_mm.sample import write_sample
from leaderboard.models import Challenge, Membership, Split, Submission, Task, Team
from leaderboard.splits import import_split_dir
from leaderboard.submitting import Artifact, MethodInfo, submit
from workers.pipeline.bundles import store_corpus

SLUG = "crag-mm-demo"
LOGIN = ("demo", "podium-demo")
TASK_NAMES = {
    "single-source-augmentation": "Task 1: single-source augmentation (image search)",
    "multi-source-augmentation": "Task 2: multi-source augmentation (image and web search)",
    "multi-turn-qa": "Task 3: multi-turn conversations",
}
KINDS = (Split.Kind.VALIDATION, Split.Kind.PUBLIC_TEST, Split.Kind.PRIVATE_TEST)


@dataclass(frozen=True)
class DemoAgent:
    team: str
    method_name: str
    directory: str  # under the repository
    description: str


AGENTS = (
    DemoAgent(
        "Retrievers",
        "rag-kit-a",
        "examples/agents/rag-kit-a",
        "image search, entity attributes, web snippets (kit A)",
    ),
    DemoAgent(
        "Context readers",
        "kit-b",
        "examples/agents/kit-b",
        "answers from the context Podium retrieves (kit B)",
    ),
    DemoAgent("Abstainers", "idk", "examples/agents/idk", 'always "I don\'t know"'),
)


def sample_dir() -> Path:
    """The sample data, written once under ``<PODIUM_VAR_DIR>/demo/sample``."""
    out = Path(settings.VAR_DIR) / "demo" / "sample"
    if not (out / "corpus" / "web.jsonl").exists():
        write_sample(out)
    return out


def challenge(data: Path) -> Challenge:
    """The challenge, its tasks, its imported splits and its search corpus."""
    found, _ = Challenge.objects.get_or_create(
        slug=SLUG,
        defaults={
            "name": "CRAG-MM demo",
            "description": "Podium's demo: generated CRAG-MM-format data and example agents.",
        },
    )
    for order, task_id in enumerate(TASKS):
        task, _ = Task.objects.get_or_create(
            challenge=found,
            task_id=task_id,
            defaults={
                "name": TASK_NAMES.get(task_id, task_id),
                "order": order,
                "web_search_enabled": task_id != "single-source-augmentation",
                "readiness_s": 120,
                "quota_per_day": None,
                "quota_concurrent": None,
            },
        )
        for kind in KINDS:
            if not Split.objects.filter(task=task, kind=kind).exclude(bundle="").exists():
                # Private results appear from now on, so the demo shows every board.
                reveal = timezone.now() if kind == Split.Kind.PRIVATE_TEST else None
                import_split_dir(task, kind, data / task_id / kind, reveal_at=reveal)
    store_corpus(found, data / "corpus")
    return found


def demo_user(on: Challenge) -> User:
    """The demo login: an organiser of the challenge (admin included), in every demo team."""
    user = User.objects.filter(username=LOGIN[0]).first()
    if user is None:
        user = User.objects.create_superuser(LOGIN[0], password=LOGIN[1])
    on.organisers.add(user)
    for agent in AGENTS:
        team, _ = Team.objects.get_or_create(name=agent.team)
        Membership.objects.get_or_create(team=team, user=user)
    return user


def context_tar(directory: Path) -> bytes:
    """A build context: the directory's files at the top level of a tar."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for path in sorted(directory.iterdir()):
            if path.name != "__pycache__":
                tar.add(path, arcname=path.name)
    return buffer.getvalue()


def submit_agents(on: Challenge, user: User, repo: Path) -> list[Submission]:
    """Each example agent, submitted once by its team (a second demo reuses the first's)."""
    submissions = []
    for agent in AGENTS:
        team = Team.objects.get(name=agent.team)
        existing = Submission.objects.filter(
            team=team, challenge=on, method_name=agent.method_name
        ).first()
        if existing is None:
            upload = SimpleUploadedFile(
                f"{agent.method_name}.tar", context_tar(repo / agent.directory)
            )
            existing = submit(
                team,
                on,
                user,
                Artifact(kind=Submission.ArtifactKind.BUILD_CONTEXT, file=upload),
                MethodInfo(method_name=agent.method_name, description=agent.description),
            )
        submissions.append(existing)
    return submissions
