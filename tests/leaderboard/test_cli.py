"""``python -m podium.cli`` against a live server (Django's live_server, real HTTP)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from leaderboard import api_tokens
from leaderboard.models import EvaluationRun, Submission, Task
from podium import cli

from .submit_support import broker, image_archive, open_splits

__all__ = ["broker", "open_splits"]  # fixtures used by name

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def token(make_user, teams, broker) -> str:
    return api_tokens.create(make_user("ann", team=teams["alpha"]), "tests")[1]


def _run(live_server, capsys, *args, token=None):
    auth = ["--token", token] if token else []
    code = cli.main(["--url", live_server.url, *auth, *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_submitting_an_archive_shows_progress_and_the_queued_runs(
    live_server, capsys, open_splits, token, tmp_path
):
    archive = image_archive(tmp_path / "agent.tar")
    code, out, err = _run(
        live_server,
        capsys,
        "submit",
        "--challenge=crag-mm-2026",
        f"--archive={archive}",
        "--method=Tiny RAG",
        "--paper-url=https://example.org/p",
        token=token,
    )
    assert code == 0, err
    submission = Submission.objects.get()
    assert out.splitlines()[0] == (
        f"submission #{submission.pk} Tiny RAG (team alpha, crag-mm-2026): received"
    )
    assert out.count("queued") == 3 and "0/12 items" in out
    assert "agent.tar" in err and "100%" in err  # the progress bar
    assert submission.artifact_size == archive.stat().st_size
    assert submission.paper_url == "https://example.org/p"


def test_status_and_json_output(live_server, capsys, open_splits, token):
    code, out, _ = _run(
        live_server, capsys, "--json", "submit", "--challenge=crag-mm-2026", "--ref=a/b:1",
        "--method=m", token=token,
    )  # fmt: skip
    submission_id = json.loads(out)["id"]
    code, out, _ = _run(live_server, capsys, "status", str(submission_id), token=token)
    assert code == 0 and f"submission #{submission_id} m (team alpha" in out
    runs = [line for line in out.splitlines() if line.startswith("  run #")]
    assert [line.split()[4] for line in runs] == ["queued"] * 3
    assert "  evaluated on: multi-turn-qa" in out.splitlines()


def test_errors_are_the_servers_words_without_a_traceback(
    live_server, capsys, open_splits, token, monkeypatch
):
    monkeypatch.delenv("PODIUM_TOKEN", raising=False)
    args = ["submit", "--challenge=crag-mm-2026", "--ref=a/b", "--method=m"]
    code, _, err = _run(live_server, capsys, *args)
    assert code == 2 and "give --token or set PODIUM_TOKEN" in err
    code, _, err = _run(live_server, capsys, *args, token="wrong")
    assert code == 1 and err.startswith("error: 401 Unauthorized: Invalid token: unknown, revoked")
    Task.objects.update(quota_total=0)
    code, _, err = _run(live_server, capsys, *args, token=token)
    assert code == 1 and err.startswith("error: not submitted: Team alpha: all 0 ")
    Task.objects.update(quota_total=None)
    code, _, err = _run(live_server, capsys, "submit", "--challenge=crag-mm-2026",
                        "--ref=Not A Ref", "--method=m", token=token)  # fmt: skip
    assert code == 1 and "400 Bad Request: registry_ref: 'Not A Ref' is not an image" in err
    code, _, err = _run(live_server, capsys, "leaderboard", "crag-mm-2026", "multi-turn-qa", "x")
    assert "has no split 'x' (splits: private-test, public-test, validation)" in err
    code = cli.main(["--url", "http://127.0.0.1:9", "leaderboard", "a", "b", "c"])
    assert code == 1 and "cannot reach http://127.0.0.1:9/api/" in capsys.readouterr().err


def test_the_leaderboard_command_as_a_separate_process(
    live_server, open_splits, teams, make_entry, token
):
    make_entry(teams["alpha"], open_splits["public-test"], 0.4, method="alpha-m")
    make_entry(teams["beta"], open_splits["public-test"], 0.1, method="beta-m", baseline=True)
    env = {**os.environ, "PODIUM_URL": live_server.url, "PODIUM_TOKEN": token}
    result = subprocess.run(
        [sys.executable, "-m", "podium.cli", "leaderboard", "crag-mm-2026", "multi-turn-qa",
         "public-test"],
        capture_output=True, text=True, env=env, timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("crag-mm-2026/multi-turn-qa/public-test: ranked by Truthfulness")
    assert lines[2].split()[:3] == ["1", "alpha", "alpha-m"] and "40.0" in lines[2]
    assert lines[3].split()[:3] == ["base", "beta", "beta-m"]


def test_submit_wait_follows_the_runs_until_they_finish(live_server, capsys, open_splits, token):
    import threading
    import time as clock

    from django.db import connection

    def finish_later() -> None:
        # once the submission's three runs exist (a loaded machine may take over a second),
        # and the CLI has polled them at least once
        deadline = clock.monotonic() + 60
        while EvaluationRun.objects.count() < 3 and clock.monotonic() < deadline:
            clock.sleep(0.1)
        clock.sleep(1.0)
        runs = EvaluationRun.objects.all()
        runs.update(state=EvaluationRun.State.DONE, items_done=4, items_total=4)
        runs.filter(split__kind="private-test").update(state=EvaluationRun.State.FAILED)
        connection.close()

    worker = threading.Thread(target=finish_later)
    worker.start()
    code, out, err = _run(
        live_server, capsys, "submit", "--challenge=crag-mm-2026", "--ref=a/b:1", "--method=m",
        "--wait", "--every=0.2", token=token,
    )  # fmt: skip
    worker.join()
    assert code == 1  # one run failed
    assert out.count("done") == 2 and out.count("failed") == 1
    assert "12/12" in err  # the progress bar reached every item
    code, out, _ = _run(
        live_server, capsys, "status", str(Submission.objects.get().pk), "--wait", token=token
    )
    assert code == 1 and "failed" in out


def test_help_names_the_environment(capsys):
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    shown = capsys.readouterr().out
    assert "PODIUM_URL" in shown and "PODIUM_TOKEN" in shown and "/account/" in shown


def test_json_anywhere_on_the_line_prints_one_document_for_every_command(
    live_server, capsys, open_splits, token, teams, make_entry
):
    make_entry(teams["alpha"], open_splits["public-test"], 0.4, method="alpha-m")
    code, out, _ = _run(live_server, capsys, "submit", "--challenge=crag-mm-2026",
                        "--ref=a/b:1", "--method=m", "--json", token=token)  # fmt: skip
    assert code == 0
    assert json.loads(out)["evaluated_on"] == [{"task": "multi-turn-qa", "splits": []}]
    submission_id = json.loads(out)["id"]
    code, out, _ = _run(live_server, capsys, "status", str(submission_id), "--json", token=token)
    assert code == 0 and len(json.loads(out)["runs"]) == 3
    code, out, _ = _run(live_server, capsys, "quota", "--json", "--challenge=crag-mm-2026",
                        token=token)  # fmt: skip
    report = json.loads(out)  # one evaluation at a time: refused (exit 1) while it runs
    assert code == 1 and report["allowed"] is False and report["tasks"][0]["concurrent"] == 1
    code, out, _ = _run(
        live_server, capsys, "leaderboard", "crag-mm-2026", "multi-turn-qa", "public-test", "--json"
    )
    assert code == 0 and json.loads(out)["entries"][0]["method_name"] == "alpha-m"
    code, out, err = _run(live_server, capsys, "status", "999999", "--json", token=token)
    assert code == 1
    assert json.loads(out) == {"error": "404 Not Found: No Submission matches the given query."}
    assert err.startswith("error: 404")


def test_a_submit_over_quota_uploads_no_byte(live_server, capsys, open_splits, token, tmp_path):
    from django.core.signals import request_started

    received: list[tuple[str, str, int]] = []

    def count(sender, environ, **kwargs) -> None:
        length = int(environ.get("CONTENT_LENGTH") or 0)
        received.append((environ["REQUEST_METHOD"], environ["PATH_INFO"], length))

    Task.objects.update(quota_total=0)
    archive = image_archive(tmp_path / "agent.tar")
    request_started.connect(count)
    try:
        code, out, err = _run(live_server, capsys, "submit", "--challenge=crag-mm-2026",
                              f"--archive={archive}", "--method=m", token=token)  # fmt: skip
    finally:
        request_started.disconnect(count)
    assert code == 1 and out == ""
    assert err == (
        "error: not submitted: Team alpha: all 0 submissions allowed on task multi-turn-qa are "
        "used\n"
    )
    assert received == [("GET", "/api/challenges/crag-mm-2026/quota/", 0)]  # the preflight only
    assert not Submission.objects.exists()
    code, out, _ = _run(live_server, capsys, "quota", "--challenge=crag-mm-2026", token=token)
    assert code == 1 and "team alpha on crag-mm-2026: refused" in out


def test_a_file_larger_than_the_tasks_take_is_not_uploaded(
    live_server, capsys, open_splits, token, tmp_path
):
    archive = image_archive(tmp_path / "agent.tar")
    Task.objects.update(max_artifact_bytes=1000)
    code, _, err = _run(live_server, capsys, "submit", "--challenge=crag-mm-2026",
                        f"--archive={archive}", "--method=m", token=token)  # fmt: skip
    size = archive.stat().st_size
    assert code == 1 and err == (
        f"error: not submitted: agent.tar is {size} bytes; the tasks chosen take at most 1000 "
        "bytes\n"
    )
    assert not Submission.objects.exists()


def test_tasks_and_splits_are_chosen_on_the_command_line(live_server, capsys, open_splits, token):
    Task.objects.update(splits_selectable=True)
    code, out, err = _run(live_server, capsys, "submit", "--challenge=crag-mm-2026", "--ref=a/b:1",
                          "--method=m", "--task=multi-turn-qa",
                          "--split=multi-turn-qa/validation", token=token)  # fmt: skip
    assert code == 0, err
    assert "  evaluated on: multi-turn-qa (validation)" in out.splitlines()
    assert [r.split.kind for r in EvaluationRun.objects.all()] == ["validation"]
    code, _, err = _run(live_server, capsys, "submit", "--challenge=crag-mm-2026", "--ref=a/b:1",
                        "--method=m", "--task=nope", token=token)  # fmt: skip
    assert code == 1 and err.startswith("error: 400 Bad Request: tasks: crag-mm-2026 has no task")


def test_wait_ends_with_each_runs_score_a_private_one_hidden(
    live_server, capsys, open_splits, token
):
    import threading
    import time as clock

    from django.db import connection

    from leaderboard.scores import store_scores

    from .factories import scores_dict

    def finish_later() -> None:
        clock.sleep(1.0)
        for run in EvaluationRun.objects.all():
            EvaluationRun.objects.filter(pk=run.pk).update(
                state=EvaluationRun.State.DONE, items_done=12
            )
            store_scores(run, scores_dict(0.4))
        connection.close()

    worker = threading.Thread(target=finish_later)
    worker.start()
    code, out, err = _run(live_server, capsys, "submit", "--challenge=crag-mm-2026", "--ref=a/b:1",
                          "--method=m", "--wait", "--every=0.2", token=token)  # fmt: skip
    worker.join()
    assert code == 0, err
    runs = {line.split()[3]: line for line in out.splitlines() if line.startswith("  run #")}
    assert runs["validation"].endswith("12/12 items  Truthfulness 40.0 [30.0, 50.0]")
    assert runs["public-test"].endswith("Truthfulness 40.0 [30.0, 50.0]")
    assert runs["private-test"].endswith("score hidden until the split's results are public")


def test_every_commands_help_names_the_environment(capsys):
    for command in ("submit", "status", "quota", "leaderboard"):
        with pytest.raises(SystemExit):
            cli.main([command, "--help"])
        shown = capsys.readouterr().out
        assert "PODIUM_URL" in shown and "PODIUM_TOKEN" in shown and "--json" in shown, command


def test_a_build_context_the_challenge_cannot_run_uploads_no_byte(
    live_server, capsys, open_splits, token, tmp_path, settings
):
    """The official CRAG-MM kit's layout: its Dockerfile's base and aicrowd.json's model are
    read from the tar here and refused by the preflight, naming what the challenge provides."""
    from django.core.signals import request_started

    from leaderboard.models import Challenge, HubModel

    from .submit_support import write_tar

    settings.PODIUM_BUILD_BASE_IMAGES = ["podium/agent-base:py3.11"]
    HubModel.objects.create(challenge=Challenge.objects.get(), hub_id="org/tiny", snapshot="a" * 40)
    kit = {"hf_models": [{"repo_id": "meta-llama/Llama-3.2-1B-Instruct", "revision": "main"}]}
    members = {
        "Dockerfile": b"FROM python:3.10-slim-bookworm\nCOPY . /agent\n",
        "aicrowd.json": json.dumps(kit).encode(),
        "requirements.txt": b"vllm\n",
    }
    context = write_tar(tmp_path / "kit.tar.gz", members, compression="gz")
    received: list[tuple[str, str]] = []
    request_started.connect(handler := lambda sender, environ, **kw: received.append(
        (environ["REQUEST_METHOD"], environ["PATH_INFO"])
    ))  # fmt: skip
    try:
        code, out, err = _run(live_server, capsys, "submit", "--challenge=crag-mm-2026",
                              f"--context={context}", "--method=kit", token=token)  # fmt: skip
    finally:
        request_started.disconnect(handler)
    assert code == 1 and out == ""
    assert err == (
        "error: not submitted: 400 Bad Request: artifact: CRAG-MM 2026 does not provide "
        "meta-llama/Llama-3.2-1B-Instruct@main: the models agents may load are org/tiny@main "
        "kit.tar.gz: Dockerfile line 1: FROM 'python:3.10-slim-bookworm' is not one of the base "
        "images this challenge allows (or an earlier stage of this Dockerfile); the allowed "
        "bases are podium/agent-base:py3.11\n"
    )
    assert received == [("POST", "/api/challenges/crag-mm-2026/quota/")]  # the preflight only
    assert not Submission.objects.exists()

    members["Dockerfile"] = b"FROM podium/agent-base:py3.11\nCOPY . /agent\n"
    members["aicrowd.json"] = b'{"hf_models": [{"repo_id": "org/tiny"}]}'
    context = write_tar(tmp_path / "kit.tar.gz", members, compression="gz")
    code, _, err = _run(live_server, capsys, "submit", "--challenge=crag-mm-2026",
                        f"--context={context}", "--method=kit", token=token)  # fmt: skip
    assert code == 0, err
    assert Submission.objects.get().declared_models == [{"hub_id": "org/tiny", "revision": "main"}]
