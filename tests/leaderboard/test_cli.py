"""``python -m podium.cli`` against a live server (Django's live_server, real HTTP)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from rest_framework.authtoken.models import Token

from leaderboard.models import EvaluationRun, Submission, Task
from podium import cli

from .submit_support import broker, image_archive, open_splits

__all__ = ["broker", "open_splits"]  # fixtures used by name

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def token(make_user, teams, broker) -> str:
    return Token.objects.create(user=make_user("ann", team=teams["alpha"])).key


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
    assert [line.split()[4] for line in out.splitlines()[1:]] == ["queued"] * 3


def test_errors_are_the_servers_words_without_a_traceback(
    live_server, capsys, open_splits, token, monkeypatch
):
    monkeypatch.delenv("PODIUM_TOKEN", raising=False)
    args = ["submit", "--challenge=crag-mm-2026", "--ref=a/b", "--method=m"]
    code, _, err = _run(live_server, capsys, *args)
    assert code == 2 and "give --token or set PODIUM_TOKEN" in err
    code, _, err = _run(live_server, capsys, *args, token="wrong")
    assert code == 1 and err == "error: 401 Unauthorized: Invalid token.\n"
    Task.objects.update(quota_total=0)
    code, _, err = _run(live_server, capsys, *args, token=token)
    assert code == 1 and err.startswith("error: 429 Too Many Requests: team alpha: all 0 ")
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
