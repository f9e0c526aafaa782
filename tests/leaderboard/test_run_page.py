"""The run page: wrong answers only and slice filters in the benchmark's terms, pages of
answers, each answer's thumbnail, the agent's output live; each for the run's team off the
private test and for organisers only."""

from __future__ import annotations

import io
import re
import threading

import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.urls import reverse
from PIL import Image

from leaderboard import run_answers
from leaderboard.models import EvaluationRun, ItemAnswer, ItemVerdict, Submission, Task

from .factories import block

ROWS = (  # item key, grade, domain, is_ego
    ("i1", "correct", "food", True),
    ("i2", "hallucinated", "food", False),
    ("i3", "missing", "vehicle", True),
    ("i4", "correct", "vehicle", False),
)


def jpeg() -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (16, 12), (10, 200, 10)).save(out, "JPEG")
    return out.getvalue()


@pytest.fixture
def world(teams, splits, make_entry, make_user, challenge):
    slices = {
        "domain": {"food": block(0.5, turns=2), "vehicle": block(0.0, turns=2)},
        "is_ego": {"true": block(0.0, turns=2), "false": block(0.5, turns=2)},
    }
    runs = {
        "public": make_entry(teams["alpha"], splits["public-test"], 0.3, slices=slices),
        "private": make_entry(teams["alpha"], splits["private-test"], 0.3, slices=slices),
        "beta": make_entry(teams["beta"], splits["public-test"], 0.2),
    }
    thumbnail = default_storage.save("thumbnails/x/one.jpg", ContentFile(jpeg()))
    for run in runs.values():
        for position, (key, grade, domain, ego) in enumerate(ROWS):
            answer = ItemAnswer.objects.create(
                run=run, group="s1", item_key=key, position=position, response=f"answer {key}",
                latency_s=0.25 + position, thumbnail=thumbnail if key == "i1" else "",
            )  # fmt: skip
            ItemVerdict.objects.create(
                answer=answer, verdict=grade, judge_id="rules@1",
                detail={"query": f"question {key}", "ground_truth": f"truth {key}",
                        "domain": domain, "is_ego": ego, "turn_idx": 0},
            )  # fmt: skip
    organiser = make_user("org")
    challenge.organisers.add(organiser)
    return {
        **runs,
        "alice": make_user("alice", team=teams["alpha"]),
        "bob": make_user("bob", team=teams["beta"]),
        "org": organiser,
    }


def page(client, run, **query) -> str:
    return client.get(reverse("leaderboard:run", args=[run.pk]), query).content.decode()


def shown_keys(html: str) -> list[str]:
    return [key for key, *_ in ROWS if f"question {key}" in html]


def test_wrong_answers_only_are_crag_mms_missing_and_hallucinated(client, world):
    client.force_login(world["alice"])
    html = page(client, world["public"])
    assert shown_keys(html) == ["i1", "i2", "i3", "i4"]
    assert "0.25" in html and "3.25" in html  # each turn's latency
    assert 'id="wrong-only"' in html
    assert shown_keys(page(client, world["public"], wrong="1")) == ["i2", "i3"]


def test_visual_rag_answers_below_full_score_are_wrong(client, world):
    Task.objects.filter(pk=world["public"].task_id).update(benchmark="visual-rag")
    grades = {"i1": "1", "i2": "0.5", "i3": "no_answer", "i4": "0"}
    for key, grade in grades.items():
        ItemVerdict.objects.filter(answer__run=world["public"], answer__item_key=key).update(
            verdict=grade,
            detail={"question": f"question {key}", "answers": ["x"], "species": "fox"},
        )
    client.force_login(world["alice"])
    assert shown_keys(page(client, world["public"], wrong="1")) == ["i2", "i3", "i4"]


def test_answers_are_filtered_by_the_slices_the_run_was_scored_by(client, world):
    client.force_login(world["alice"])
    html = page(client, world["public"])
    assert 'id="slice-filter"' in html and "slice=domain&amp;value=vehicle" in html
    assert shown_keys(page(client, world["public"], slice="domain", value="vehicle")) == [
        "i3", "i4",
    ]  # fmt: skip
    both = page(client, world["public"], slice="is_ego", value="true", wrong="1")
    assert shown_keys(both) == ["i3"]
    unknown = page(client, world["public"], slice="domain", value="sports")
    assert "this run has no slice domain = &#x27;sports&#x27;" in unknown
    assert shown_keys(unknown) == []


def test_answers_come_a_page_at_a_time(client, world, monkeypatch):
    monkeypatch.setattr(run_answers, "ANSWERS_PER_PAGE", 3)
    client.force_login(world["alice"])
    first = page(client, world["public"])
    assert shown_keys(first) == ["i1", "i2", "i3"] and "page 1 of 2 (4 answers)" in first
    assert shown_keys(page(client, world["public"], page="2")) == ["i4"]
    sliced = page(client, world["public"], slice="is_ego", value="false", page="1")
    assert shown_keys(sliced) == ["i2", "i4"]


def test_private_answers_and_filters_reach_only_organisers(client, world):
    client.force_login(world["alice"])
    html = page(client, world["private"], wrong="1")
    assert shown_keys(html) == [] and "never shown" in html and "slice-filter" not in html
    client.force_login(world["org"])
    assert shown_keys(page(client, world["private"], wrong="1")) == ["i2", "i3"]


def thumbnail_url(run, key="i1") -> str:
    answer = ItemAnswer.objects.get(run=run, item_key=key)
    return reverse("leaderboard:answer-thumbnail", args=[run.pk, answer.pk])


def test_a_thumbnail_is_served_with_the_run_pages_rule_and_cached(client, world):
    client.force_login(world["alice"])
    html = page(client, world["public"])
    assert thumbnail_url(world["public"]) in html
    assert thumbnail_url(world["public"], "i2") not in html  # no image: no thumbnail
    response = client.get(thumbnail_url(world["public"]))
    assert response.status_code == 200 and response["Content-Type"] == "image/jpeg"
    assert b"".join(response.streaming_content) == jpeg()
    assert "private" in response["Cache-Control"] and "max-age=604800" in response["Cache-Control"]
    again = client.get(thumbnail_url(world["public"]), HTTP_IF_NONE_MATCH=response["ETag"])
    assert again.status_code == 304
    assert client.get(thumbnail_url(world["public"], "i2")).status_code == 404
    assert client.get(thumbnail_url(world["private"])).status_code == 404  # private split
    answer_of_beta = ItemAnswer.objects.get(run=world["beta"], item_key="i1")
    crossed = reverse("leaderboard:answer-thumbnail", args=[world["public"].pk, answer_of_beta.pk])
    assert client.get(crossed).status_code == 404  # another run's answer under this run
    client.force_login(world["bob"])
    assert client.get(thumbnail_url(world["public"])).status_code == 404  # another team
    client.force_login(world["org"])
    assert client.get(thumbnail_url(world["private"])).status_code == 200
    client.logout()
    response = client.get(thumbnail_url(world["public"]))
    assert response.status_code == 302 and response["Location"].startswith(reverse("account_login"))


def test_the_agent_log_is_polled_live_with_the_run_pages_rule(client, world):
    for name in ("public", "private"):
        EvaluationRun.objects.filter(pk=world[name].pk).update(
            state=EvaluationRun.State.RUNNING, agent_log=f"loading model for {name}\n"
        )
    url = reverse("leaderboard:run-log", args=[world["public"].pk])
    private_url = reverse("leaderboard:run-log", args=[world["private"].pk])
    client.force_login(world["alice"])
    response = client.get(url)
    assert response.json() == {
        "id": world["public"].pk, "state": "running", "finished": False,
        "log": "loading model for public\n",
    }  # fmt: skip
    assert "no-store" in response["Cache-Control"]
    assert url in page(client, world["public"])  # the page polls it while the run is active
    assert client.get(private_url).status_code == 404
    assert private_url not in page(client, world["private"])
    client.force_login(world["bob"])
    assert client.get(url).status_code == 404
    client.force_login(world["org"])
    assert client.get(private_url).json()["log"] == "loading model for private\n"
    client.logout()
    assert client.get(url).status_code == 302


@pytest.mark.django_db(transaction=True)
def test_the_running_stage_stores_the_output_only_while_the_run_is_its_own(world):
    from leaderboard.pipeline.ownership import worker_id
    from leaderboard.pipeline.run import log_sink

    def from_the_runners_thread(text: str) -> None:  # as OutputWatch calls it
        thread = threading.Thread(target=log_sink(run), args=(text,))
        thread.start()
        thread.join()

    run = world["public"]
    EvaluationRun.objects.filter(pk=run.pk).update(
        state=EvaluationRun.State.RUNNING, worker_id=worker_id(), agent_log=""
    )
    run.refresh_from_db()
    from_the_runners_thread("step 1\n")
    assert EvaluationRun.objects.get(pk=run.pk).agent_log == "step 1\n"
    EvaluationRun.objects.filter(pk=run.pk).update(worker_id="other-host:1")
    from_the_runners_thread("step 2\n")  # re-queued, taken by another worker: not ours
    assert EvaluationRun.objects.get(pk=run.pk).agent_log == "step 1\n"


def shown_text(html: str, element_id: str) -> str:
    """The words of the element with ``element_id`` as a reader sees them (tags out, spaces
    collapsed)."""
    start = html.index(f'id="{element_id}"')
    part = html[html.index(">", start) + 1 : html.index("</nav>", start)]
    return " ".join(re.sub(r"<[^>]+>", "", part).split())


def test_each_slice_value_is_its_own_word(client, world):
    client.force_login(world["alice"])
    words = shown_text(page(client, world["public"]), "slice-filter")
    assert words == "Slice: every item domain: food vehicle is_ego: false true"


def test_a_run_cancelled_before_it_started_says_so_and_no_empty_duration(client, world):
    done = world["public"]
    submission = Submission.objects.create(
        team=done.submission.team, challenge=done.submission.challenge, method_name="m",
        artifact_kind=Submission.ArtifactKind.REGISTRY_REF,
    )  # fmt: skip
    run = EvaluationRun.objects.create(submission=submission, task=done.task, split=done.split)
    run.move_to(EvaluationRun.State.CANCELLED, failure_reason="An organiser cancelled this run.")
    client.force_login(world["alice"])
    html = page(client, run)
    ended = f"{EvaluationRun.objects.get(pk=run.pk).finished_at:%Y-%m-%d %H:%M:%S}"
    assert f"· ended {ended} UTC before it started</p>" in html and "()" not in html
