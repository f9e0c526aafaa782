"""What a task's agents can run (``leaderboard.task_environment``), shown on the challenge page,
in the starter kit and by the API; and the preflight and the upload refusing a build context
whose models or base images the challenge cannot run, naming what it can (issue 34)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from django.core.exceptions import ValidationError
from django.core.files import File
from rest_framework.test import APIClient

from leaderboard import api_tokens
from leaderboard.kits import contents
from leaderboard.models import Challenge, HubModel, Split, Submission, Task
from leaderboard.submitting import Artifact, MethodInfo, submit

from .submit_support import open_splits, stored_under, write_tar

__all__ = ["open_splits"]  # fixtures used by name

INDEX = "https://pypi.example.org/simple/"
LLAMA = "meta-llama/Llama-3.2-11B-Vision-Instruct"
BASES = ["podium/agent-base:py3.11", "podium/agent-base:cuda12"]
# The official CRAG-MM starter kit's Dockerfile starts so, and its aicrowd.json names its model.
KIT_DOCKERFILE = b"FROM python:3.10-slim-bookworm\nCOPY . /agent\n"
KIT_MODELS = {"hf_models": [{"repo_id": "meta-llama/Llama-3.2-1B-Instruct", "revision": "main"}]}
ALLOWED_BASES = "the allowed bases are podium/agent-base:py3.11, podium/agent-base:cuda12"
PROVIDED = f"the models agents may load are {LLAMA}@main, org/clip@v1"


@pytest.fixture
def provided(challenge, settings) -> Challenge:
    """Two models registered, a package index, and a second task on a CPU-only class."""
    settings.PODIUM_BUILD_BASE_IMAGES = BASES
    settings.PODIUM_GPU_CLASSES = ["l40s", "cpu"]
    HubModel.objects.create(challenge=challenge, hub_id=LLAMA, snapshot="a" * 40)
    HubModel.objects.create(
        challenge=challenge, hub_id="org/clip", revision="v1", snapshot="b" * 40
    )
    challenge.package_index = INDEX
    challenge.save(update_fields=["package_index"])
    Task.objects.create(
        challenge=challenge, task_id="cpu-task", name="CPU", order=5, gpu_class="cpu"
    )
    return challenge


def _api(user=None) -> APIClient:
    api = APIClient()
    if user is not None:
        api.credentials(HTTP_AUTHORIZATION=f"Token {api_tokens.create(user, 'tests')[1]}")
    return api


def test_the_api_lists_each_tasks_models_gpu_bases_and_index(provided, task):
    body = _api().get("/api/challenges/crag-mm-2026/").json()
    assert body["tasks"] == [
        {
            "task_id": "multi-turn-qa",
            "models": [
                {"hub_id": LLAMA, "revision": "main"},
                {"hub_id": "org/clip", "revision": "v1"},
            ],
            "gpu": True,
            "gpu_class": "l40s",
            "runtime": "runc",  # GPU tasks keep runc (PODIUM_GPU_RUNTIME)
            "base_images": BASES,
            "package_index": INDEX,
        },
        {
            "task_id": "cpu-task",
            "models": [
                {"hub_id": LLAMA, "revision": "main"},
                {"hub_id": "org/clip", "revision": "v1"},
            ],
            "gpu": False,
            "gpu_class": "cpu",
            "runtime": None,  # Podium's default: runsc where the node's engine offers it
            "base_images": BASES,
            "package_index": INDEX,
        },
    ]
    Challenge.objects.update(package_index="")
    HubModel.objects.all().delete()
    (listed,) = _api().get("/api/challenges/").json()["results"]
    assert listed["tasks"][0]["models"] == [] and listed["tasks"][0]["package_index"] is None


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", html)).strip()


def test_the_challenge_page_shows_each_tasks_environment(client, provided, splits):
    page = client.get("/c/crag-mm-2026/", {"tab": "leaderboards"}).content.decode()
    found = dict(
        re.findall(
            r'<ul class="task-environment" id="environment-([\w-]+)"[^>]*>(.*?)</ul>', page, re.S
        )
    )
    assert _text(found["multi-turn-qa"]) == (
        "GPU: one per run, class l40s "
        "Runtime: runc, with every hardening of Podium (GPU tasks keep runc until the nodes run a "
        "gVisor with its GPU proxy) "
        "Models agents may load by hub id (declared in aicrowd.json's hf_models or podium.json): "
        f"{LLAMA}, org/clip@v1 "
        "Base images a Dockerfile may start FROM: podium/agent-base:py3.11, "
        "podium/agent-base:cuda12 "
        f"Package index for builds: {INDEX} (pip install reaches it and nothing else)"
    )
    assert _text(found["cpu-task"]).startswith(
        "GPU: none (runs of class cpu have CPUs only) Runtime: gVisor (runsc) where the node "
        "offers it, else runc with every hardening of Podium; the run page says which "
    )
    Challenge.objects.update(package_index="")
    HubModel.objects.all().delete()
    page = client.get("/c/crag-mm-2026/", {"tab": "leaderboards"}).content.decode()
    shown = _text(page)
    assert "or podium.json): none: a submission declaring a model is refused" in shown
    assert (
        "Package index for builds: none: builds have no network, ship your wheels in the build "
        "context" in shown
    )


def test_the_starter_kit_lists_them_in_its_readme_and_manifest(provided, task):
    plan = contents.plan(provided)
    first = plan.manifest["tasks"][0]
    assert {
        k: first[k]
        for k in ("task_id", "models", "gpu", "gpu_class", "base_images", "package_index")
    } == {
        "task_id": "multi-turn-qa",
        "models": [{"hub_id": LLAMA, "revision": "main"}, {"hub_id": "org/clip", "revision": "v1"}],
        "gpu": True,
        "gpu_class": "l40s",
        "base_images": BASES,
        "package_index": INDEX,
    }
    assert plan.manifest["tasks"][1]["gpu"] is False
    section = plan.readme.split("## What your agent can use on Podium")[1].split("## 1.")[0]
    assert "Task `multi-turn-qa`:\n- GPU: one per run, class `l40s`\n" in section
    assert f": `{LLAMA}`, `org/clip@v1`\n" in section
    assert (
        "(every stage, `COPY --from`): `podium/agent-base:py3.11`, `podium/agent-base:cuda12`\n"
        in section
    )
    assert f"- package index for builds: `{INDEX}` (`pip install`" in section
    assert "Task `cpu-task`:\n- GPU: none (runs of class `cpu` have CPUs only)\n" in section
    before = plan.version
    HubModel.objects.filter(hub_id="org/clip").delete()
    assert contents.plan(provided).version != before  # a new model list, a new kit


def _context(path: Path, dockerfile: bytes, **manifests: object) -> Path:
    members = {"Dockerfile": dockerfile, "agent.py": b"class Agent: ...\n"}
    members |= {
        name.replace("_", "."): json.dumps(data).encode() for name, data in manifests.items()
    }
    return write_tar(path, members, compression="gz")


@pytest.fixture
def ann(make_user, teams):
    return make_user("ann", team=teams["alpha"])


QUOTA = "/api/challenges/crag-mm-2026/quota/"


def test_the_preflight_refuses_the_official_kit_naming_the_models_and_bases_allowed(
    provided, open_splits, ann
):
    asked = {
        "filename": "kit.tar.gz",
        "dockerfile": KIT_DOCKERFILE.decode(),
        "manifests": {"aicrowd.json": json.dumps(KIT_MODELS)},
    }
    answer = _api(ann).post(QUOTA, asked, format="json")
    assert answer.status_code == 400
    assert answer.json() == {
        "artifact": [
            f"CRAG-MM 2026 does not provide meta-llama/Llama-3.2-1B-Instruct@main: {PROVIDED}",
            "kit.tar.gz: Dockerfile line 1: FROM 'python:3.10-slim-bookworm' is not one of the "
            "base images this challenge allows (or an earlier stage of this Dockerfile); "
            f"{ALLOWED_BASES}",
        ]
    }
    fixed = {
        "filename": "kit.tar.gz",
        "tasks": ["multi-turn-qa"],
        "dockerfile": "FROM docker.io/podium/agent-base:cuda12 AS deps\nFROM deps\n",
        "manifests": {"aicrowd.json": json.dumps({"hf_models": [{"repo_id": LLAMA}]})},
    }
    answer = _api(ann).post(QUOTA, fixed, format="json")
    assert answer.status_code == 200 and answer.json()["allowed"] is True
    assert [row["task"] for row in answer.json()["tasks"]] == ["multi-turn-qa"]
    wrong = _api(ann).post(QUOTA, {**fixed, "manifests": {"setup.py": "x"}}, format="json")
    assert wrong.json() == {"manifests": ["setup.py: not a manifest (aicrowd.json or podium.json)"]}
    assert not Submission.objects.exists()


def test_the_upload_refuses_a_base_the_challenge_does_not_allow(
    provided, open_splits, ann, tmp_path
):
    path = _context(tmp_path / "kit.tar.gz", b"# the official kit\n" + KIT_DOCKERFILE)
    artifact = Artifact(
        Submission.ArtifactKind.BUILD_CONTEXT, file=File(path.open("rb"), name=path.name)
    )
    with pytest.raises(ValidationError) as refused:
        submit(ann.memberships.get().team, provided, ann, artifact, MethodInfo("kit"))
    assert refused.value.message_dict["artifact"] == [
        "kit.tar.gz: Dockerfile line 2: FROM 'python:3.10-slim-bookworm' is not one of the base "
        f"images this challenge allows (or an earlier stage of this Dockerfile); {ALLOWED_BASES}"
    ]
    assert not Submission.objects.exists() and stored_under("submissions") == set()
    good = _context(
        tmp_path / "ok.tar.gz",
        b"FROM podium/agent-base:py3.11\n",
        aicrowd_json={"hf_models": [{"repo_id": LLAMA}]},
    )
    artifact = Artifact(
        Submission.ArtifactKind.BUILD_CONTEXT, file=File(good.open("rb"), name=good.name)
    )
    Split.objects.update(items=1)
    made = submit(ann.memberships.get().team, provided, ann, artifact, MethodInfo("kit"))
    assert made.declared_models == [{"hub_id": LLAMA, "revision": "main"}]
