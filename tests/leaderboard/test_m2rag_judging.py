"""The judging stage of an M2RAG run on the server: the text prompts at the task's judge
endpoint, the image prompts (images as data URLs) at its vision judge endpoint, each endpoint
within its own concurrency limit (``PODIUM_JUDGE_ENDPOINTS``, ``workers.judge_slots``)."""

from __future__ import annotations

import uuid

import pytest
from django.core.files.storage import default_storage
from PIL import Image

from evaluator.benchmarks.m2rag.agent import stored_reply
from evaluator.benchmarks.m2rag.items import M2Prediction
from leaderboard.models import EvaluationRun, ItemAnswer, Submission, Task
from leaderboard.pipeline.judge import judge_stage
from leaderboard.splits import import_split_dir
from tests.evaluator.m2rag.test_judging import ANSWER, respond, write_split
from tests.fake_openai import FakeOpenAI
from tests.services import redis_url
from workers.faults import PodiumFault


def image_parts(payload: dict) -> list[str]:
    """The image URLs a request carries."""
    return [
        part["image_url"]["url"]
        for message in payload["messages"]
        if isinstance(message["content"], list)
        for part in message["content"]
        if part.get("type") == "image_url"
    ]


# transaction: the judging stage caches judgments from its worker threads' own connections
@pytest.mark.django_db(transaction=True)
def test_image_prompts_go_to_the_vision_endpoint_within_its_own_limit(
    challenge, teams, tmp_path, settings
):
    text_name, vision_name = f"text-{uuid.uuid4().hex[:8]}", f"vlm-{uuid.uuid4().hex[:8]}"
    settings.CELERY_BROKER_URL = redis_url("reaper")
    task = Task.objects.create(
        challenge=challenge, task_id="m2rag", name="M2RAG", benchmark="m2rag",
        primary_metric="overall", image_search_enabled=False, web_search_enabled=False,
        judge_kind=Task.JudgeKind.OPENAI, judge_model="fake-judge", judge_endpoint=text_name,
        vision_judge_endpoint=vision_name,
    )  # fmt: skip
    (tmp_path / "split").mkdir()
    split = import_split_dir(task, "validation", write_split(tmp_path / "split"))
    submission = Submission.objects.create(
        team=teams["alpha"], challenge=challenge, method_name="m",
        artifact_kind=Submission.ArtifactKind.REGISTRY_REF, registry_ref="x/y:1",
    )  # fmt: skip
    run = EvaluationRun.objects.create(
        submission=submission, task=task, split=split, state=EvaluationRun.State.JUDGING
    )
    ItemAnswer.objects.create(
        run=run, group="science", item_key="q1", position=0,
        response=stored_reply(M2Prediction("q1", ANSWER)),
    )  # fmt: skip
    with FakeOpenAI(latency_s=0.1) as text, FakeOpenAI(latency_s=0.1) as vision:
        text.respond = vision.respond = respond
        settings.PODIUM_JUDGE_ENDPOINTS = {
            text_name: {"base_url": text.url, "model": "fake-judge", "concurrency": 1},
            vision_name: {"base_url": vision.url, "model": "fake-vlm", "concurrency": 3},
        }
        Task.objects.filter(pk=task.pk).update(vision_judge_endpoint="")
        run = EvaluationRun.objects.get(pk=run.pk)
        with pytest.raises(PodiumFault, match="names no vision judge endpoint"):
            judge_stage(run)  # never images to a model that may not see them
        assert text.count == vision.count == 0
        Task.objects.filter(pk=task.pk).update(vision_judge_endpoint=vision_name)
        run = EvaluationRun.objects.get(pk=run.pk)
        assert judge_stage(run) == 0
    run.refresh_from_db()
    assert (text.count, vision.count) == (5, 6)  # 5 text prompts; 3 per placed image
    assert not any(image_parts(p) for p in text.requests)  # no image leaves for the text one
    urls = [url for p in vision.requests for url in image_parts(p)]
    assert len(urls) == 6 and all(url.startswith("data:image/png;base64,") for url in urls)
    assert {p["model"] for p in vision.requests} == {"fake-vlm"}
    assert text.peak_in_flight == 1 and 1 < vision.peak_in_flight <= 3  # each its own limit
    assert run.judge_id == "openai:fake-judge@unspecified+vision:openai:fake-vlm@unspecified"
    answer = ItemAnswer.objects.get(run=run)
    assert answer.verdict.detail["placed"] == [0, 1] and answer.verdict.judge_id == run.judge_id
    assert sorted(answer.images) == ["0", "1"]  # the placed images, stored for the run page
    with default_storage.open(answer.images["1"], "rb") as stored, Image.open(stored) as image:
        assert image.format == "JPEG" and image.size == (48, 48)  # small ones stay their size
    # one entry for both, serving the task's model: one judge, every prompt there
    Task.objects.filter(pk=task.pk).update(vision_judge_endpoint=text_name)
    with FakeOpenAI() as both:
        both.respond = respond
        settings.PODIUM_JUDGE_ENDPOINTS = {
            text_name: {"base_url": both.url, "model": "fake-judge", "concurrency": 2}
        }
        assert judge_stage(EvaluationRun.objects.get(pk=run.pk)) == 0
    assert both.count == 11 and len([p for p in both.requests if image_parts(p)]) == 6
    assert both.peak_in_flight <= 2
    assert EvaluationRun.objects.get(pk=run.pk).judge_id == "openai:fake-judge@unspecified"
