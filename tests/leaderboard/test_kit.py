"""The starter kit archive: what it holds, what it never holds, and that it is made once."""

from __future__ import annotations

import hashlib
import json
import re

import pytest
from django.urls import reverse

from leaderboard.kits import archive, contents
from leaderboard.models import Split, Task
from leaderboard.splits import import_split_dir

from .factories import write_small_split
from .kit_support import PRIVATE_QUERY_MARK, body_of, kit_challenge, kit_members, kit_settings

__all__ = ["kit_challenge", "kit_settings"]  # fixtures used by name

DOWNLOAD = reverse("leaderboard:kit-download", args=["crag-mm-2026"])


@pytest.fixture
def member(client, make_user, teams):
    client.force_login(make_user("ann", team=teams["alpha"]))
    return client


@pytest.fixture
def builds(monkeypatch):
    """How many times a kit archive was made."""
    made = []
    write = archive.write_kit

    def counted(plan, out):
        made.append(plan.version)
        write(plan, out)

    monkeypatch.setattr(archive, "write_kit", counted)
    return made


def _download(client) -> tuple[object, dict[str, bytes]]:
    response = client.get(DOWNLOAD)
    assert response.status_code == 200, response.content
    body = body_of(response)
    assert response["X-Content-SHA256"] == hashlib.sha256(body).hexdigest()
    assert int(response["Content-Length"]) == len(body)
    return response, kit_members(body)


def test_the_kit_holds_the_example_agent_public_splits_tools_and_no_private_data(
    kit_challenge, member
):
    response, files = _download(member)
    plan = contents.plan(kit_challenge)
    assert f'filename="{plan.filename}"' in response["Content-Disposition"]
    assert plan.filename.startswith("crag-mm-2026-starter-kit-")
    assert files["agents/rag-kit-a/Dockerfile"].startswith(b"FROM podium/agent-base:py3.11")
    assert b"class RagAgent" in files["agents/rag-kit-a/agent.py"]
    for kind, sessions in (("validation", 3), ("public-test", 2)):
        lines = files[f"data/multi-turn-qa/{kind}/sessions.jsonl"].decode().splitlines()
        assert len(lines) == sessions
        assert f"data/multi-turn-qa/{kind}/images/s0.jpg" in files
    assert not [name for name in files if "private" in name]
    assert not any(PRIVATE_QUERY_MARK.encode() in data for data in files.values())
    assert not [name for name in files if name.startswith("corpus/")], "corpus: off by default"
    assert "tools/evaluator/cli.py" in files and "tools/workers/cli.py" in files
    assert "tools/podium/cli.py" in files and "tools/podium/downloads.py" in files
    server_imports = re.compile(rb"^\s*(from|import)\s+(django|leaderboard)\b", re.MULTILINE)
    tools = [name for name in files if name.startswith("tools/") and name.endswith(".py")]
    assert not [name for name in tools if server_imports.search(files[name])], "runs without Django"
    assert b"docker==" in files["tools/requirements.txt"]
    assert b"Django" not in files["tools/requirements.txt"]
    manifest = json.loads(files["kit.json"])
    assert [(s["kind"], s["sha256"]) for s in manifest["splits"]] == [
        (kind, Split.objects.get(kind=kind).sha256) for kind in ("validation", "public-test")
    ]
    assert manifest["corpus"] is None and manifest["version"] == plan.version
    readme = files["README.md"].decode()
    assert "the private test split of `multi-turn-qa`: a private test is never in the kit" in readme
    assert "the search corpus: the organisers do not distribute it" in readme
    assert "docker build -t my-agent agents/rag-kit-a" in readme
    assert "--split data/multi-turn-qa/validation" in readme
    assert "--per-turn-s 10 --readiness-s 600" in readme and "--counting paper" in readme


def test_the_corpus_is_in_the_kit_only_when_the_organisers_allow_it(kit_challenge, member):
    without = contents.plan(kit_challenge)
    kit_challenge.kit_includes_corpus = True
    kit_challenge.save()
    _, files = _download(member)
    assert files["corpus/images.jsonl"].startswith(b'{"image": "images/a.jpg"')
    assert "corpus/web.jsonl" in files and "corpus/images/a.jpg" in files
    assert json.loads(files["kit.json"])["corpus"]["path"] == "corpus"
    assert "--corpus corpus" in files["README.md"].decode()
    assert contents.plan(kit_challenge).version != without.version


def test_hidden_and_unrevealed_public_splits_stay_out(kit_challenge, member):
    public = Split.objects.get(kind="public-test")
    public.visibility = Split.Visibility.HIDDEN
    public.save()
    _, files = _download(member)
    assert not [name for name in files if "/public-test/" in name]
    assert "the public test split of `multi-turn-qa`: the organisers keep it hidden" in (
        files["README.md"].decode()
    )
    validation = Split.objects.get(kind="validation")
    validation.reveal_at = validation.imported_at.replace(year=2099)
    validation.save()
    plan = contents.plan(kit_challenge)
    assert plan.splits == ()
    assert [(s.kind, why[:18]) for s, why in plan.withheld] == [
        ("validation", validation.reveal_at.strftime("from %Y-%m-%d %H")),
        ("public-test", "the organisers kee"),
        ("private-test", "a private test is "),
    ]


def test_a_kit_is_made_once_per_content_version(kit_challenge, member, builds, task, tmp_path):
    first, _ = _download(member)
    again, _ = _download(member)
    assert len(builds) == 1 and first["X-Content-SHA256"] == again["X-Content-SHA256"]
    import_split_dir(task, "validation", write_small_split(tmp_path / "v2", 4))
    changed, files = _download(member)
    assert len(builds) == 2, "a new public split makes a new kit"
    assert changed["X-Content-SHA256"] != first["X-Content-SHA256"]
    assert len(files["data/multi-turn-qa/validation/sessions.jsonl"].splitlines()) == 4


def test_the_same_content_gives_the_same_bytes(kit_challenge, tmp_path):
    plan = contents.plan(kit_challenge)
    outputs = []
    for name in ("a", "b"):
        with (tmp_path / name).open("w+b") as out:
            archive.write_kit(plan, out)
        outputs.append((tmp_path / name).read_bytes())
    assert outputs[0] == outputs[1]


def test_a_damaged_bundle_stops_the_kit_and_nothing_is_stored(kit_challenge, member):
    split = Split.objects.get(kind="validation")
    with split.bundle.open("r+b") as handle:
        handle.seek(600)
        handle.write(b"X")
    response = member.get(DOWNLOAD)
    assert response.status_code == 503
    assert b"stored copy of its data is damaged" in response.content
    assert archive.stored_kit(contents.plan(kit_challenge)) is None


def test_the_kit_page_lists_the_contents_and_links_from_the_data_tab(kit_challenge, member):
    page = member.get(reverse("leaderboard:kit", args=["crag-mm-2026"])).content.decode()
    assert "agents/rag-kit-a/" in page and "validation split of <code>multi-turn-qa</code>" in page
    assert "made on the first download" in page and "private test is never in the kit" in page
    _download(member)
    page = member.get(reverse("leaderboard:kit", args=["crag-mm-2026"])).content.decode()
    assert archive.stored_kit(contents.plan(kit_challenge)).sha256 in page
    kit_challenge.data = "The data."
    kit_challenge.save()
    tab = member.get(reverse("leaderboard:challenge", args=["crag-mm-2026"]) + "?tab=data")
    assert 'id="kit-link"' in tab.content.decode()


def test_each_benchmark_gets_its_example_agent_and_commands(kit_challenge):
    Task.objects.create(
        challenge=kit_challenge, task_id="visual-rag", name="Visual-RAG", benchmark="visual-rag",
        primary_metric="accuracy", web_search_enabled=False, order=1,
    )  # fmt: skip
    plan = contents.plan(kit_challenge)
    assert plan.agents == ("rag-kit-a", "visual-rag-colour")
    assert tuple(t["example_agent"] for t in plan.manifest["tasks"]) == plan.agents
    readme = plan.readme
    assert (
        "python -m workers.cli --image my-agent --protocol visual-rag --task visual-rag" in readme
    )
    assert "--split data/visual-rag/validation --setting retrieval" in readme
    assert "--settings retrieval --gcue-lambda 0.5" in readme
    assert "(The kit has no public split of this task" in readme
    assert "Podium runs every submission in each of these settings: `retrieval`, `zero_shot`" in (
        readme
    )
