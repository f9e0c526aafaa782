"""``manage.py demo --no-serve`` end to end on PostgreSQL, twice (the second reuses the first);
``manage.py demo`` serving the site from its start to after the runs."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
import urllib.request

import pytest

from evaluator.benchmarks.mrag_suite.modes import MODES as MRAG_MODES
from leaderboard.demo.setup import (
    AGENTS,
    M2RAG_AGENTS,
    M2RAG_SLUG,
    MRAG_AGENTS,
    MRAG_SLUG,
    SLUG,
    VISUAL_RAG_AGENTS,
    VISUAL_RAG_SETTINGS,
    VISUAL_RAG_SLUG,
)
from leaderboard.models import EvaluationRun, SliceScore, Split, Submission
from tests.e2e.harness import REPO, pipeline
from tests.leaderboard.test_demo_serve import answer, free_port

pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.django_db(transaction=True)]
__all__ = ["pipeline"]  # the fixture used below


def _demo(env: dict[str, str]) -> str:
    result = subprocess.run(
        [sys.executable, "manage.py", "demo", "--no-serve"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=540,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result.stdout


def test_the_demo_evaluates_every_split_and_prints_the_rankings(pipeline):
    output = _demo(pipeline.env)

    splits = Split.objects.filter(task__challenge__slug=SLUG)
    assert splits.count() == 9
    runs = EvaluationRun.objects.filter(submission__challenge__slug=SLUG)
    assert runs.count() == 9 * len(AGENTS)
    visual = EvaluationRun.objects.filter(submission__challenge__slug=VISUAL_RAG_SLUG)
    assert visual.count() == 3 * len(VISUAL_RAG_SETTINGS) * len(VISUAL_RAG_AGENTS)
    mrag = EvaluationRun.objects.filter(submission__challenge__slug=MRAG_SLUG)
    assert mrag.count() == len(MRAG_MODES) * len(MRAG_AGENTS)
    every = EvaluationRun.objects.all()
    assert set(every.values_list("state", flat=True)) == {EvaluationRun.State.DONE}
    assert f"{every.count()} of {every.count()} runs done." in output
    # Visual-RAG: a board per split and setting, the colour agent first; gCUE across settings.
    for split in Split.objects.filter(task__challenge__slug=VISUAL_RAG_SLUG):
        for setting in VISUAL_RAG_SETTINGS:
            title = f"\nvisual-rag / {split.kind} / {setting}\n"
            board = output.split(title, 1)[1].split("\n\n")[0]
            methods = [line.split()[1] for line in board.splitlines()[1:] if line.strip()]
            if setting != "zero_shot":  # without an image both agents say "I don't know"
                assert methods[0] == "visual-rag-colour", board
            assert sorted(methods[:2]) == ["visual-rag-colour", "visual-rag-idk"], board
    assert "across settings: visual-rag-colour" in output and "gcue@3" in output
    # MRAG-Suite: a board per retrieval mode; with gold evidence the grounded agent answers
    # every item right and the evidence-ignoring one none; the GPD - GO gap across modes
    for mode in MRAG_MODES:
        board = output.split(f"\nmrag-suite / validation / {mode}\n", 1)[1].split("\n\n")[0]
        rows = [line.split() for line in board.splitlines()[1:] if line.split()[:1] != ["across"]]
        assert sorted(row[1] for row in rows) == ["mrag-grounded", "mrag-no-evidence"], board
        if mode != "DO":  # distractors only: neither answers right
            assert rows[0][1] == "mrag-grounded" and rows[0][-3] == "100.0", board
    assert "across settings: mrag-grounded        gpd_go_gap 0.000" in output
    # M2RAG: its validation split, the agent placing relevant images above the text-only one
    m2rag_runs = EvaluationRun.objects.filter(submission__challenge__slug=M2RAG_SLUG)
    assert m2rag_runs.count() == len(M2RAG_AGENTS)
    board = output.split("\nm2rag / validation\n", 1)[1].split("\n\n")[0]
    methods = [line.split()[1] for line in board.splitlines()[1:] if line.strip()]
    assert methods == ["m2rag-images", "m2rag-text"], board
    # Every board: the retrieval agent first, the abstaining one last, as stored.
    for split in splits:
        board = output.split(f"\n{split.task.task_id} / {split.kind}\n", 1)[1].split("\n\n")[0]
        methods = [line.split()[1] for line in board.splitlines()[1:]]
        assert methods[0] == "rag-kit-a" and methods[-1] == "idk", board
    idk = SliceScore.objects.filter(run__submission__method_name="idk", dimension="all")
    assert {row.metrics["missing"] for row in idk} == {1.0}

    before = set(Submission.objects.values_list("pk", flat=True))
    again = _demo(pipeline.env)
    assert set(Submission.objects.values_list("pk", flat=True)) == before
    assert "0 runs to go" in again


def test_the_demo_serves_first_and_keeps_serving_after_the_runs(pipeline):
    """The site answers as soon as the demo says where, before the base image and the runs (no
    run has finished, nothing is ranked yet); after every run it still answers, with the boards;
    a ``kill`` stops the server with the demo."""
    port = free_port()
    demo = subprocess.Popen(
        [sys.executable, "manage.py", "demo", "--addr", f"127.0.0.1:{port}"],
        cwd=REPO, env=pipeline.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    said: list[str] = []
    reader = threading.Thread(target=lambda: said.extend(iter(demo.stdout.readline, "")))
    reader.start()
    board = f"http://127.0.0.1:{port}/c/{SLUG}/"
    try:
        wait_for(lambda: f"demo: serving at http://127.0.0.1:{port}/ now" in "".join(said), 300)
        status, _ = answer(board, within_s=120)
        assert status == 200 and "runs done." not in "".join(said), "served before the runs"
        wait_for(lambda: "Every run has finished; still serving" in "".join(said), 540)
        status, page = answer(f"{board}multi-turn-qa/public-test/", within_s=30)
        assert status == 200 and "rag-kit-a" in page
    finally:
        demo.terminate()
        code = demo.wait(timeout=60)
        reader.join(timeout=10)
    assert code == 143, "".join(said)[-3000:]
    with pytest.raises(OSError):
        urllib.request.urlopen(board, timeout=5)


def wait_for(condition, within_s: float) -> None:
    deadline = time.monotonic() + within_s
    while not condition():
        assert time.monotonic() < deadline, f"not within {within_s} s"
        time.sleep(0.5)
