"""The kit from the command line (``python -m podium.cli kit``, against a live server), and the
kit's own commands: its README's local evaluation runs from the kit's ``tools/`` alone."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from evaluator.archives import extract_tar
from leaderboard import api_tokens
from leaderboard.kits import archive, contents, downloads
from leaderboard.kits.commands import task_commands
from leaderboard.models import Task
from podium import cli

from .kit_support import kit_challenge, kit_settings

__all__ = ["kit_challenge", "kit_settings"]  # fixtures used by name


@pytest.fixture
def unpacked_kit(kit_challenge, tmp_path) -> Path:
    plan = contents.plan(kit_challenge)
    with (tmp_path / "kit.tar.gz").open("w+b") as out:
        archive.write_kit(plan, out)
    extract_tar(tmp_path / "kit.tar.gz", tmp_path / "unpacked")
    return tmp_path / "unpacked" / plan.folder


def _in_kit(kit: Path, command: str) -> subprocess.CompletedProcess:
    """``command`` run in the kit's folder with only its tools importable (not Podium's)."""
    env = {**os.environ, "PYTHONPATH": str(kit / "tools"), "PATH": os.defpath}
    env["PATH"] = f"{Path(sys.executable).parent}:{env['PATH']}"
    env.pop("DJANGO_SETTINGS_MODULE", None)
    return subprocess.run(
        ["bash", "-c", command], cwd=kit, env=env, capture_output=True, text=True, timeout=300
    )


def test_the_readme_evaluation_commands_run_from_the_kit_alone(unpacked_kit, kit_challenge):
    readme = (unpacked_kit / "README.md").read_text()
    task = Task.objects.get()
    commands = task_commands(task, list(contents.plan(kit_challenge).splits), False)
    assert commands.run in readme and commands.score in readme
    predictions = unpacked_kit / "runs" / "multi-turn-qa" / "predictions.jsonl"
    predictions.parent.mkdir(parents=True)
    predictions.write_text(
        json.dumps({"session_id": "s0", "interaction_id": "s0-t0", "response": "answer 0.0"}) + "\n"
    )
    done = _in_kit(unpacked_kit, commands.score)
    assert done.returncode == 0, done.stderr
    scores = json.loads((unpacked_kit / "runs/multi-turn-qa/scores/scores.json").read_text())
    assert scores["complete"] is True
    for tool in ("python -m workers.cli --help", "python -m podium.cli kit --help"):
        shown = _in_kit(unpacked_kit, tool)
        assert shown.returncode == 0 and "usage:" in shown.stdout, shown.stderr
    where = _in_kit(unpacked_kit, "python -c 'import evaluator, workers; print(workers.__file__)'")
    assert where.stdout.strip() == str(unpacked_kit / "tools" / "workers" / "__init__.py")


pytestmark_live = pytest.mark.django_db(transaction=True)


@pytest.fixture
def token(make_user, teams) -> str:
    return api_tokens.create(make_user("ann", team=teams["alpha"]), "tests")[1]


def _run(live_server, capsys, token, *args):
    code = cli.main(["--url", live_server.url, "--token", token, "kit", "crag-mm-2026", *args])
    out, err = capsys.readouterr()
    return code, out, err


@pytestmark_live
def test_the_cli_downloads_the_kit_and_checks_its_sha256(
    live_server, capsys, kit_challenge, token, tmp_path
):
    code, out, err = _run(live_server, capsys, token, f"--output={tmp_path / 'kit'}")
    assert code == 0, err
    plan = contents.plan(kit_challenge)
    saved = tmp_path / "kit" / plan.filename
    stored = archive.stored_kit(plan)
    assert hashlib.sha256(saved.read_bytes()).hexdigest() == stored.sha256
    assert f"sha256 {stored.sha256} (downloaded)" in out and "100%" in err
    assert not list((tmp_path / "kit").glob("*.part"))
    code, out, _ = _run(live_server, capsys, token, f"--output={tmp_path / 'kit'}")
    assert code == 0 and "(already there)" in out


@pytestmark_live
def test_a_wrong_sha256_keeps_nothing(
    live_server, capsys, kit_challenge, token, tmp_path, monkeypatch
):
    streamed = downloads.streamed

    def tampered(stored, filename):
        response = streamed(stored, filename)
        response[downloads.SHA256_HEADER] = "0" * 64
        return response

    monkeypatch.setattr(downloads, "streamed", tampered)
    code, _, err = _run(live_server, capsys, token, f"--output={tmp_path / 'kit'}")
    assert code == 1 and f"differs from the {'0' * 64} the server sent" in err
    assert list((tmp_path / "kit").iterdir()) == []


@pytestmark_live
def test_cli_errors_are_the_servers_words(
    live_server, capsys, kit_challenge, token, tmp_path, monkeypatch
):
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    code, _, err = _run(live_server, capsys, token, f"--output={tmp_path}", "--base-image")
    assert code == 1
    assert (
        "error: podium-agent-base-py3.11.tar: 503 Service Unavailable: The agent base image" in err
    )
    code, _, err = _run(live_server, capsys, token, "--base-image=postgres:16")
    assert code == 1 and "'postgres:16' is not a base image of crag-mm-2026" in err
    kit_challenge.rules = "Play fair."
    kit_challenge.save()
    code, _, err = _run(live_server, capsys, token)
    assert code == 1 and "403 Forbidden: accept the rules of CRAG-MM 2026" in err
