"""End to end: the official CRAG-MM starter kit's layout, unmodified
(tests/e2e/agents/crag_mm_starter_kit: its Dockerfile from ``python:3.10-slim-bookworm`` pinning
pip, its requirements.txt, its aicrowd.json naming three hub models, its agents/user_config.py
importing all three agents), submitted to a challenge configured like the original, reaches the
board.

No registry is reachable, so the organiser configures the original's world offline: the kit's
base image name is allowed and provided (Podium's agent base, tagged
``python:3.10-slim-bookworm`` in the node's engine), the kit's three models are registered
(a tiny folder each, under the hub id), and the challenge names a package index (the test's
local index, tests/package_index.py) serving the kit's requirements under their real names:
tiny wheels (``torch``, ``vllm``, ``transformers`` with the names the kit's modules import),
and this Python's own pip as pip 21.0.1."""

from __future__ import annotations

import json
import shutil

import docker
import pytest
from django.core.management import call_command
from django.test import Client

from leaderboard.models import Challenge, EvaluationRun, HubModel, ItemAnswer, Submission
from leaderboard.splits import import_split_dir
from tests.e2e.harness import REPO, make_task, pipeline, submit_agent, team_member, write_split
from tests.package_index import pip_as, serve_index, wheel

pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.django_db(transaction=True)]
__all__ = ["pipeline", "team_member"]  # fixtures used by the test below

KIT = REPO / "tests/e2e/agents/crag_mm_starter_kit"
KIT_BASE = "python:3.10-slim-bookworm"
AGENT_BASE = "podium/agent-base:py3.11"
# requirements.txt's packages an index must serve (Pillow is the base's, cragmm-search-pipeline
# Podium's stand-in): (name, version, modules, dependencies)
SERVED = [
    ("hf_transfer", "0.1.9", {"hf_transfer.py": ""}, ()),
    ("dotenv", "0.9.9", {"dotenv.py": ""}, ()),
    ("torch", "2.6.0", {"torch/__init__.py": "__version__ = '2.6.0'\n"}, ()),
    (
        "transformers",
        "4.51.3",
        {
            "transformers/__init__.py": "class AutoProcessor: ...\n\n\n"
            "class MllamaForConditionalGeneration: ...\n"
        },
        ("requests",),
    ),
    ("accelerate", "1.6.0", {"accelerate.py": ""}, ()),
    ("sentence-transformers", "4.1.0", {"sentence_transformers.py": ""}, ()),
    ("vllm", "0.8.5", {"vllm/__init__.py": "class LLM: ...\n\n\nclass SamplingParams: ...\n"}, ()),
    ("pandas", "2.2.3", {"pandas.py": ""}, ()),
    ("pydantic", "2.11.4", {"pydantic.py": ""}, ()),
    ("datasets", "3.5.1", {"datasets.py": ""}, ("requests",)),
    ("jinja2", "3.1.6", {"jinja2.py": ""}, ()),
    ("tokenizers", "0.21.1", {"tokenizers.py": ""}, ()),
    ("openai", "1.77.0", {"openai.py": ""}, ()),
    ("chromadb", "1.0.8", {"chromadb.py": ""}, ()),
    ("loguru", "0.7.3", {"loguru.py": ""}, ()),
    ("rich", "14.0.0", {"rich.py": ""}, ()),
    ("tqdm", "4.67.1", {"tqdm.py": ""}, ()),
    ("requests", "2.32.3", {"requests.py": "def get(url, timeout=None): ...\n"}, ()),
]


@pytest.fixture
def kit_base_image():
    """The organiser's provision: Podium's agent base under the kit's base image name, in the
    node's engine (the name given back afterwards)."""
    engine = docker.from_env()
    base = engine.images.get(AGENT_BASE)
    before = engine.images.list(name=KIT_BASE)
    base.tag(KIT_BASE)
    try:
        yield KIT_BASE
    finally:
        engine.images.remove(KIT_BASE)  # the tag only: the agent base keeps its own
        for image in before:
            image.tag(KIT_BASE)
        engine.close()


def test_the_official_starter_kit_unmodified_reaches_the_board(
    pipeline, team_member, tmp_path, settings, kit_base_image
):
    team, user = team_member
    index = tmp_path / "index"
    (index / "files").mkdir(parents=True)
    for name, version, modules, requires in SERVED:
        wheel(index / "files", name, version, modules, requires)
    pip_as(index / "files", "21.0.1")
    bases = f"{AGENT_BASE},{kit_base_image}"
    settings.PODIUM_BUILD_BASE_IMAGES = bases.split(",")
    settings.PODIUM_MODEL_STORE = pipeline.var / "models"
    kit = json.loads((KIT / "aicrowd.json").read_text())

    with serve_index(index) as (url, requests):
        challenge = Challenge.objects.create(
            name="CRAG-MM", slug="crag-mm", package_index=url, is_published=True
        )
        for model in kit["hf_models"]:  # the organiser registers the kit's models
            files = tmp_path / "models" / model["repo_id"]
            files.mkdir(parents=True)
            (files / "config.json").write_text(json.dumps({"model_type": "tiny"}))
            call_command(
                "register_model", model["repo_id"], str(files), "--challenge", challenge.slug
            )
        task = make_task(challenge, kit["challenge_id"])
        split = import_split_dir(task, "validation", write_split(tmp_path / "split", 3, 1))
        repository = shutil.copytree(KIT, tmp_path / "kit")  # the participant's clone
        submission = submit_agent(team, user, challenge, repository, "starter-kit")
        pipeline.start_worker(
            "worker",
            PODIUM_BUILD_BASE_IMAGES=bases,
            PODIUM_MODEL_STORE=str(settings.PODIUM_MODEL_STORE),
        )
        (run,) = pipeline.wait_finished(submission, timeout_s=300)
    assert run.state == EvaluationRun.State.DONE, (run.failure_reason, run.operator_detail)
    submission.refresh_from_db()
    assert submission.state == Submission.State.READY
    assert submission.declared_models == [
        {"hub_id": m["repo_id"], "revision": "main"} for m in kit["hf_models"]
    ]
    assert HubModel.objects.filter(challenge=challenge).count() == 3
    assert "/files/pip-21.0.1-py3-none-any.whl" in requests  # the pinned pip, then the rest
    installed = [x for x in submission.build_log.splitlines() if "Successfully installed" in x]
    assert {"torch-2.6.0", "transformers-4.51.3", "vllm-0.8.5", "requests-2.32.3"} <= set(
        installed[-1].split()
    )  # the kit's requirements, and what they need
    asked = {f"/simple/{name.lower().replace('_', '-')}/" for name, *_ in SERVED}
    assert asked <= set(requests), "every requirement came from the index"
    assert "/simple/cragmm-search-pipeline/" not in requests  # Podium's stand-in satisfies it
    assert "/simple/pillow/" not in requests  # the base image's Pillow does

    # RandomAgent answered every turn with random letters: all wrong (hand-computed: 3 turns,
    # accuracy 0, hallucination 1, truthfulness 0 - 1 = -1), and the entry is on the board.
    answers = run.answers.filter(outcome=ItemAnswer.Outcome.ANSWERED)
    assert answers.count() == split.items == 3
    board = Client().get(f"/api/splits/{split.pk}/leaderboard/").json()
    (entry,) = board["entries"]
    assert entry["method_name"] == "starter-kit"
    assert (entry["metrics"]["accuracy"], entry["metrics"]["truthfulness"]) == (0.0, -1.0)
