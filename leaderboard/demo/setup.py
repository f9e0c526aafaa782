"""Setting up the demo challenges the way an organiser and teams would, reusing what exists.

Challenges, each on its protocol's generated sample (``write_sample``):

- CRAG-MM: the three tasks, each with validation, public-test and private-test splits
  (imported with ``import_split_dir``), and the search corpus;
- Visual-RAG: one task evaluated in five settings (one run each per split), with gCUE;
- M2RAG: ``leaderboard/demo/m2rag.py``.

Each example agent is submitted by its own team as a build context through ``submit``, the web
form's code path. Nothing is created twice: a second demo finds the challenges, splits, teams
and submissions of the first.
"""

from __future__ import annotations

import io
import tarfile
from dataclasses import dataclass
from pathlib import Path

from allauth.account.models import EmailAddress
from django.conf import settings
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone

from agentkit.protocol import TASKS
from evaluator.protocols.crag_mm.sample import write_sample
from evaluator.protocols.visual_rag.sample import write_sample as write_visual_rag_sample
from leaderboard.models import Challenge, Membership, Split, Submission, Task, Team
from leaderboard.publishing import publish
from leaderboard.splits import import_split_dir
from leaderboard.submitting import Artifact, MethodInfo, submit
from workers.pipeline.bundles import store_corpus

SLUG = "crag-mm-demo"
VISUAL_RAG_SLUG = "visual-rag-demo"
VISUAL_RAG_SETTINGS = ("retrieval", "zero_shot", "gt_clue", "non_clue", "one_in_3")
DEMO_EMAIL = "demo@podium.localhost"
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
VISUAL_RAG_AGENTS = (
    DemoAgent(
        "Colour matchers",
        "visual-rag-colour",
        "examples/agents/visual-rag-colour",
        "ranks candidates by the asked colour, answers from the images",
    ),
    DemoAgent(
        "Abstainers",
        "visual-rag-idk",
        "examples/agents/visual-rag-idk",
        'always "I don\'t know", candidates as given',
    ),
)


def sample_dir() -> Path:
    """The CRAG-MM sample data, written once under ``<PODIUM_VAR_DIR>/demo/sample``."""
    out = Path(settings.VAR_DIR) / "demo" / "sample"
    if not (out / "corpus" / "web.jsonl").exists():
        write_sample(out)
    return out


def visual_rag_sample_dir() -> Path:
    """The Visual-RAG sample, written once under ``<PODIUM_VAR_DIR>/demo/visual-rag``."""
    out = Path(settings.VAR_DIR) / "demo" / "visual-rag"
    if not (out / "private-test" / "queries.jsonl").exists():
        write_visual_rag_sample(out)
    return out


def _import_splits(task: Task, data: Path, kinds: tuple[str, ...] = KINDS) -> None:
    """Each kind's split from ``data/<kind>``, unless imported already."""
    for kind in kinds:
        if not Split.objects.filter(task=task, kind=kind).exclude(bundle="").exists():
            # Private results appear from now on, so the demo shows every board.
            reveal = timezone.now() if kind == Split.Kind.PRIVATE_TEST else None
            import_split_dir(task, kind, data / kind, reveal_at=reveal)


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
        _import_splits(task, data / task_id)
    store_corpus(found, data / "corpus")
    publish(found)  # through the checklist, as an organiser would
    return found


def visual_rag_challenge(data: Path) -> Challenge:
    """The Visual-RAG challenge: one task in ``VISUAL_RAG_SETTINGS``, its imported splits."""
    found, _ = Challenge.objects.get_or_create(
        slug=VISUAL_RAG_SLUG,
        defaults={
            "name": "Visual-RAG demo",
            "description": "Podium's demo: generated Visual-RAG-format data (species photos "
            "drawn with Pillow) and example agents, evaluated in five settings with gCUE.",
        },
    )
    task, _ = Task.objects.get_or_create(
        challenge=found,
        task_id="visual-rag",
        defaults={
            "name": "Visual-RAG: retrieve the clue image, answer from it",
            "protocol": Task.Protocol.VISUAL_RAG,
            "primary_metric": "accuracy",
            "settings": {"evaluated": list(VISUAL_RAG_SETTINGS)},
            "image_search_enabled": False,
            "web_search_enabled": False,
            "readiness_s": 120,
            "quota_per_day": None,
            "quota_concurrent": None,
        },
    )
    _import_splits(task, data)
    publish(found)
    return found


def demo_user(*on: Challenge) -> User:
    """The demo login: an organiser of the challenges (admin included); ``submit_agents``
    makes it a member of each example agent's team."""
    user = User.objects.filter(username=LOGIN[0]).first()
    if user is None:
        user = User.objects.create_superuser(LOGIN[0], password=LOGIN[1], email=DEMO_EMAIL)
    EmailAddress.objects.get_or_create(  # the sign-in form wants a verified address
        user=user, email=DEMO_EMAIL, defaults={"verified": True, "primary": True}
    )
    for challenge in on:
        challenge.organisers.add(user)
    return user


def context_tar(directory: Path) -> bytes:
    """A build context: the directory's files at the top level of a tar."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for path in sorted(directory.iterdir()):
            if path.name != "__pycache__":
                tar.add(path, arcname=path.name)
    return buffer.getvalue()


def submit_agents(
    on: Challenge, user: User, repo: Path, agents: tuple[DemoAgent, ...] = AGENTS
) -> list[Submission]:
    """Each example agent, submitted once by its team, which ``user`` is in (a second demo
    reuses the first's)."""
    submissions = []
    for agent in agents:
        team, _ = Team.objects.get_or_create(name=agent.team)
        Membership.objects.get_or_create(team=team, user=user)
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
