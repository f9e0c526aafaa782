"""Setting up the demo the way an organiser and teams would, reusing what exists.

The challenges are bundles (``examples/challenges/``, ``docs/challenge-bundle.md``), imported
as an organiser imports one: CRAG-MM (three tasks, each with validation, public-test and
private-test splits, and the search corpus), Visual-RAG (one task evaluated in five settings,
with gCUE), MRAG-Suite (one task on the validation split in the three retrieval modes, with
the GPD - GO gap and each entry's MM-RAGChecker profile) and M2RAG (one task, its validation
split, judged by the rules judge). Their data is each benchmark's generated sample
(``write_sample``), written once into a copy of the bundle under
``<PODIUM_VAR_DIR>/demo/bundles/``.

What stays here simulates teams: the demo login, its teams, and each example agent submitted
by its own team as a build context through ``submit``, the web form's code path. Nothing is
created twice: a second demo finds the challenges (importing the same bundle changes nothing),
teams and submissions of the first.
"""

from __future__ import annotations

import io
import shutil
import tarfile
from dataclasses import dataclass
from pathlib import Path

from allauth.account.models import EmailAddress
from django.conf import settings
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile

from evaluator.benchmarks import get_benchmark
from leaderboard.challenge_bundle.importer import import_bundle
from leaderboard.models import Challenge, Membership, Submission, Team
from leaderboard.pages import accept_rules, must_accept_rules
from leaderboard.submitting import Artifact, MethodInfo, submit

REPO = Path(__file__).resolve().parents[2]
SLUG = "crag-mm-demo"
VISUAL_RAG_SLUG = "visual-rag-demo"
M2RAG_SLUG = "m2rag-demo"
# what examples/challenges/visual-rag-demo/challenge.yaml evaluates (the demo's test reads it)
VISUAL_RAG_SETTINGS = ("retrieval", "zero_shot", "gt_clue", "non_clue", "one_in_3")
MRAG_SLUG = "mrag-suite-demo"
DEMO_EMAIL = "demo@podium.localhost"
LOGIN = ("demo", "podium-demo")


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
MRAG_AGENTS = (
    DemoAgent(
        "Grounded readers",
        "mrag-grounded",
        "examples/agents/mrag-grounded",
        "answers from the retrieved passage that shares the question's words",
    ),
    DemoAgent(
        "Evidence skippers",
        "mrag-no-evidence",
        "examples/agents/mrag-no-evidence",
        "the same confident answer whatever was retrieved",
    ),
)


def bundle(name: str, benchmark: str, under: Path | None = None) -> Path:
    """``examples/challenges/<name>`` copied into ``under`` (default
    ``<PODIUM_VAR_DIR>/demo/bundles/``), with ``protocol``'s generated sample as its ``data/``
    (written once; the bundle's own files copied afresh)."""
    out = (under or Path(settings.VAR_DIR) / "demo" / "bundles") / name
    data, written = out / "data", out / ".data-written"
    if not written.exists():
        shutil.rmtree(data, ignore_errors=True)
        get_benchmark(benchmark).write_sample(data)
        written.write_text("")
    for path in (REPO / "examples" / "challenges" / name).iterdir():
        if path.is_dir():
            shutil.copytree(path, out / path.name, dirs_exist_ok=True)
        else:
            shutil.copy2(path, out / path.name)
    return out


def challenge() -> Challenge:
    """The CRAG-MM demo challenge, imported from its bundle."""
    import_bundle(bundle(SLUG, "crag-mm"), via="demo")
    return Challenge.objects.get(slug=SLUG)


def visual_rag_challenge() -> Challenge:
    """The Visual-RAG demo challenge, imported from its bundle."""
    import_bundle(bundle(VISUAL_RAG_SLUG, "visual-rag"), via="demo")
    return Challenge.objects.get(slug=VISUAL_RAG_SLUG)


def mrag_challenge() -> Challenge:
    """The MRAG-Suite demo challenge, imported from its bundle."""
    import_bundle(bundle(MRAG_SLUG, "mrag-suite"), via="demo")
    return Challenge.objects.get(slug=MRAG_SLUG)


M2RAG_AGENTS = (
    DemoAgent(
        "Image placers",
        "m2rag-images",
        "examples/agents/m2rag-images",
        "places the images whose caption shares the query's words",
    ),
    DemoAgent("Text writers", "m2rag-text", "examples/agents/m2rag-text", "text only"),
)


def m2rag_challenge() -> Challenge:
    """The M2RAG demo challenge, imported from its bundle."""
    import_bundle(bundle(M2RAG_SLUG, "m2rag"), via="demo")
    return Challenge.objects.get(slug=M2RAG_SLUG)


def demo_user(*on: Challenge) -> User:
    """The demo login: an organiser of the challenges (admin included), in every demo team."""
    user = User.objects.filter(username=LOGIN[0]).first()
    if user is None:
        user = User.objects.create_superuser(LOGIN[0], password=LOGIN[1], email=DEMO_EMAIL)
    EmailAddress.objects.get_or_create(  # the sign-in form wants a verified address
        user=user, email=DEMO_EMAIL, defaults={"verified": True, "primary": True}
    )
    for challenge in on:
        challenge.organisers.add(user)
        if must_accept_rules(user, challenge):  # as each participant does before submitting
            accept_rules(user, challenge)
    for agent in (*AGENTS, *VISUAL_RAG_AGENTS, *MRAG_AGENTS, *M2RAG_AGENTS):
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


def submit_agents(
    on: Challenge, user: User, repo: Path, agents: tuple[DemoAgent, ...] = AGENTS
) -> list[Submission]:
    """Each example agent, submitted once by its team (a second demo reuses the first's)."""
    submissions = []
    for agent in agents:
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
