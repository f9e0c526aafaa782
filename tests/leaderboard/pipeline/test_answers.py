"""The running stage's sink (``leaderboard.pipeline.answers``): a batch's answers are stored on a
thread of their own while the runner goes on, one write in flight at most, its error raised in
the runner's thread, everything stored by ``close``."""

from __future__ import annotations

import threading

import pytest

from leaderboard.models import EvaluationRun, ItemAnswer
from leaderboard.pipeline import answers
from leaderboard.pipeline.answers import AnswerSink
from leaderboard.pipeline.ownership import RunLost, worker_id
from workers.outcomes import ItemResult

pytestmark = pytest.mark.django_db(transaction=True)  # the sink's thread has its own connection
State = EvaluationRun.State


def batch(first: int, size: int = 4) -> list[ItemResult]:
    return [
        ItemResult(f"t{i}", f"c{i}", 0, f"answer {i}", "answered", 0.1)
        for i in range(first, first + size)
    ]


@pytest.fixture
def running(pipeline_run) -> EvaluationRun:
    return pipeline_run(State.RUNNING, worker=worker_id())


def test_the_runner_goes_on_while_a_batch_is_stored_and_waits_for_one_write_at_most(
    running, monkeypatch
):
    release, entered = threading.Event(), threading.Event()
    insert = AnswerSink._insert

    def held(self, results):
        entered.set()
        assert release.wait(10)
        return insert(self, results)

    monkeypatch.setattr(AnswerSink, "_insert", held)
    sink = AnswerSink(running, 0)
    sink(batch(0))  # returns while the insert is held
    assert entered.wait(10) and not ItemAnswer.objects.filter(run=running).exists()
    second = threading.Thread(target=sink, args=(batch(4),))
    second.start()
    second.join(0.3)
    assert second.is_alive(), "the next batch waits for the write in flight"
    release.set()
    second.join(10)
    sink.close()
    stored = ItemAnswer.objects.filter(run=running).order_by("item_key")
    assert [a.item_key for a in stored] == [f"t{i}" for i in range(8)]
    running.refresh_from_db()
    assert running.items_done == 4  # the first batch's progress (then at most every 0.5 s)


def test_a_run_taken_away_stops_at_the_next_batch_and_its_stored_answers_stay(running):
    sink = AnswerSink(running, 0)
    sink(batch(0))
    sink.wait()
    EvaluationRun.objects.filter(pk=running.pk).update(worker_id="another-node:1")
    sink.last_beat = 0.0  # the next write beats (and finds the run gone)
    sink(batch(4))
    with pytest.raises(RunLost, match=f"run #{running.pk} is no longer this worker's"):
        sink(batch(8))
    sink.close()  # the error was raised once: closing does not raise it again
    assert ItemAnswer.objects.filter(run=running).count() == 8


def test_closing_raises_the_last_write_s_error_and_ends_the_thread(running, monkeypatch):
    monkeypatch.setattr(answers, "while_database_returns", lambda: lambda f, *a: f(*a))
    monkeypatch.setattr(AnswerSink, "_insert", lambda self, results: 1 / 0)
    sink = AnswerSink(running, 0)
    sink(batch(0))
    with pytest.raises(ZeroDivisionError):
        sink.close()
    assert sink._writer._shutdown
