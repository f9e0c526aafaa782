"""The organisers' bulk export of answers and verdicts (``leaderboard.answer_export``): only a
challenge's organisers get it, from the page and the API; its rows, checked by hand, in CSV and
JSON Lines, for the whole challenge and one split; a bad request is named; and the memory it
takes does not grow with the rows exported (read and written a chunk at a time)."""

from __future__ import annotations

import csv
import io
import json
import tracemalloc
from datetime import UTC, datetime

import pyarrow.parquet as pq
import pytest
from django.test import Client
from rest_framework.test import APIClient

from leaderboard import answer_export
from leaderboard.models import EvaluationRun, ItemAnswer, ItemVerdict, Submission

pytestmark = pytest.mark.django_db

JUDGED = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def _run(team, split, method: str) -> EvaluationRun:
    submission = Submission.objects.create(
        team=team, challenge=split.task.challenge, method_name=method,
        artifact_kind=Submission.ArtifactKind.REGISTRY_REF, registry_ref="example/agent:1",
    )  # fmt: skip
    return EvaluationRun.objects.create(
        submission=submission, task=split.task, split=split, state=EvaluationRun.State.DONE
    )


@pytest.fixture
def runs(teams, splits):
    """Alpha's run on validation (two answers, both judged, with a transcript) and beta's on
    the public test (one answer timed out, not judged)."""
    alpha = _run(teams["alpha"], splits["validation"], "rag, v1")
    EvaluationRun.objects.filter(pk=alpha.pk).update(transcript="transcripts/run-t.jsonl")
    for position, (key, text, verdict) in enumerate(
        [("i1", 'A "red" bus', "correct"), ("i2", "no idea\nreally", "missing")]
    ):
        answer = ItemAnswer.objects.create(
            run=alpha, group="s1", item_key=key, position=position, response=text, latency_s=1.5
        )
        ItemVerdict.objects.create(
            answer=answer, verdict=verdict, judge_id="rules@1", prompt_version="v2",
            prompt_hash="abc", judged_at=JUDGED,
        )  # fmt: skip
    beta = _run(teams["beta"], splits["public-test"], "baseline")
    ItemAnswer.objects.create(
        run=beta, group="s9", item_key="i9", position=0, outcome=ItemAnswer.Outcome.TIMEOUT
    )
    return alpha, beta


def _content(response) -> str:
    assert response.status_code == 200, response.content
    assert response.streaming
    return b"".join(response.streaming_content).decode()


def test_only_organisers_export_from_the_page_and_the_api(runs, challenge, make_user):
    organiser, stranger = make_user(), make_user()
    challenge.organisers.add(organiser)
    url = "/c/crag-mm-2026/answers.csv"
    assert Client().get(url).status_code == 302  # to the sign-in page
    outsider = Client()
    outsider.force_login(stranger)
    for address in (url, "/c/crag-mm-2026/answers/", "/c/crag-mm-2026/answers.jsonl"):
        assert outsider.get(address).status_code == 403
    api = APIClient()
    assert api.get("/api/challenges/crag-mm-2026/answers.csv").status_code in (401, 403)
    api.force_authenticate(stranger)
    assert api.get("/api/challenges/crag-mm-2026/answers.csv").status_code == 404
    api.force_authenticate(organiser)
    assert _content(api.get("/api/challenges/crag-mm-2026/answers.jsonl")).count("\n") == 3
    page = Client()
    page.force_login(organiser)
    links = page.get("/c/crag-mm-2026/answers/").content.decode()
    assert 'href="/c/crag-mm-2026/answers.csv"' in links
    assert 'href="/c/crag-mm-2026/answers.jsonl?task=multi-turn-qa&amp;split=validation"' in links
    detail = page.get("/c/crag-mm-2026/").content.decode()
    assert 'href="/c/crag-mm-2026/answers/"' in detail


def test_the_csv_of_the_whole_challenge_row_by_row(runs, challenge, make_user):
    alpha, beta = runs
    client = Client()
    client.force_login(make_user(staff=True))
    response = client.get("/c/crag-mm-2026/answers.csv")
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert 'filename="crag-mm-2026-answers.csv"' in response["Content-Disposition"]
    table = list(csv.reader(io.StringIO(_content(response))))
    assert table[0] == list(answer_export.COLUMNS)
    a, b = alpha.submission_id, beta.submission_id
    transcript = f"/runs/{alpha.pk}/transcript.jsonl"
    assert table[1:] == [
        [str(alpha.pk), "alpha", str(a), "rag, v1", "multi-turn-qa", "validation", "1", "", "0",
         "done", "s1", "0", "i1", "answered", "", "1.5", 'A "red" bus', "correct", "rules@1",
         "v2", "abc", "2026-11-30T12:00:00+00:00", transcript],
        [str(alpha.pk), "alpha", str(a), "rag, v1", "multi-turn-qa", "validation", "1", "", "0",
         "done", "s1", "1", "i2", "answered", "", "1.5", "no idea\nreally", "missing",
         "rules@1", "v2", "abc", "2026-11-30T12:00:00+00:00", transcript],
        [str(beta.pk), "beta", str(b), "baseline", "multi-turn-qa", "public-test", "1", "", "0",
         "done", "s9", "0", "i9", "timeout", "", "", "", "", "", "", "", "", ""],
    ]  # fmt: skip


def test_json_lines_of_one_split_and_bad_requests(runs, challenge, make_user):
    alpha, _ = runs
    client = Client()
    client.force_login(make_user(staff=True))
    response = client.get("/c/crag-mm-2026/answers.jsonl?task=multi-turn-qa&split=validation")
    assert response["Content-Type"] == "application/jsonl; charset=utf-8"
    rows = [json.loads(line) for line in _content(response).splitlines()]
    assert [row["item_key"] for row in rows] == ["i1", "i2"]
    assert rows[1] == {
        "run": alpha.pk, "team": "alpha", "submission": alpha.submission_id,
        "method": "rag, v1", "task": "multi-turn-qa", "split": "validation",
        "split_version": 1, "setting": "", "trial": 0, "run_state": "done", "group": "s1",
        "position": 1,
        "item_key": "i2", "outcome": "answered", "problem": "", "latency_s": 1.5,
        "response": "no idea\nreally", "verdict": "missing", "judge_id": "rules@1",
        "prompt_version": "v2", "prompt_hash": "abc", "judged_at": "2026-11-30T12:00:00+00:00",
        "transcript": f"/runs/{alpha.pk}/transcript.jsonl",
    }  # fmt: skip
    empty = client.get("/c/crag-mm-2026/answers.csv?task=multi-turn-qa&split=private-test")
    assert _content(empty).splitlines() == [",".join(answer_export.COLUMNS)]
    for query, message in [
        ("answers.xml", "export as csv, jsonl or parquet, not 'xml'"),
        ("answers.csv?task=multi-turn-qa", "name both the task and the split, or neither"),
        ("answers.csv?task=other&split=validation",
         "CRAG-MM 2026 has no split 'validation' in a task 'other'"),
    ]:  # fmt: skip
        refused = client.get(f"/c/crag-mm-2026/{query}")
        assert (refused.status_code, refused.content.decode()) == (400, message)


def test_parquet_of_the_whole_challenge_has_the_same_rows_typed(runs, challenge, make_user):
    alpha, beta = runs
    client = Client()
    client.force_login(make_user(staff=True))
    response = client.get("/c/crag-mm-2026/answers.parquet")
    assert response["Content-Type"] == "application/vnd.apache.parquet"
    assert response.streaming
    table = pq.read_table(io.BytesIO(b"".join(response.streaming_content)))
    assert table.column_names == list(answer_export.COLUMNS)
    assert str(table.schema.field("latency_s").type) == "double"
    assert str(table.schema.field("position").type) == "int64"
    rows = table.to_pylist()
    assert [(r["run"], r["item_key"], r["verdict"]) for r in rows] == [
        (alpha.pk, "i1", "correct"), (alpha.pk, "i2", "missing"), (beta.pk, "i9", None)
    ]  # fmt: skip
    assert rows[2] == {
        "run": beta.pk, "team": "beta", "submission": beta.submission_id, "method": "baseline",
        "task": "multi-turn-qa", "split": "public-test", "split_version": 1, "setting": "",
        "trial": 0, "run_state": "done", "group": "s9", "position": 0, "item_key": "i9",
        "outcome": "timeout", "problem": "", "latency_s": None, "response": "", "verdict": None,
        "judge_id": None, "prompt_version": None, "prompt_hash": None, "judged_at": None,
        "transcript": None,
    }  # fmt: skip
    empty = client.get("/c/crag-mm-2026/answers.parquet?task=multi-turn-qa&split=private-test")
    nothing = pq.read_table(io.BytesIO(b"".join(empty.streaming_content)))
    assert (nothing.num_rows, nothing.column_names) == (0, list(answer_export.COLUMNS))


def _peak(challenge, rows: int, run, fmt: str) -> int:
    ItemAnswer.objects.filter(run=run).delete()
    ItemAnswer.objects.bulk_create(
        ItemAnswer(run=run, group="g", item_key=f"k{n}", position=n, response="x" * 200)
        for n in range(rows)
    )
    tracemalloc.start()
    try:
        written = sum(1 for _ in answer_export.streamed(challenge, fmt))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert written == {"csv": rows + 1, "jsonl": rows, "parquet": rows // 500 + 1}[fmt]
    return peak


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
def test_memory_does_not_grow_with_the_rows_exported(teams, splits, challenge, monkeypatch, fmt):
    """Python's own allocations (pyarrow's buffers are measured by bench/answer_export.py)."""
    monkeypatch.setattr(answer_export, "CHUNK", 500)
    run = _run(teams["alpha"], splits["validation"], "m")
    small, large = _peak(challenge, 2_000, run, fmt), _peak(challenge, 20_000, run, fmt)
    # ten times the rows: the peak stays that of a chunk (read at once, it would be ~10x)
    assert large < small * 1.5, (small, large)
    print(f"peak bytes: {small} for 2,000 rows, {large} for 20,000")
