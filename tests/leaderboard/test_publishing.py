"""A challenge starts as a draft and is published only through its checklist: tasks and splits,
a corpus for tasks that search, reveal times for private tests, a judge endpoint that answers."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.admin import helpers
from django.core.exceptions import ValidationError
from django.urls import reverse
from django.utils import timezone

from leaderboard.models import Challenge, Phase, Split, Task
from leaderboard.pipeline.bundles import store_corpus
from leaderboard.publishing import publish, publish_problems
from tests.fake_openai import FakeOpenAI


@pytest.fixture
def draft(db) -> Challenge:
    return Challenge.objects.create(name="Draft", slug="draft-challenge")


def corpus(tmp_path):
    (tmp_path / "corpus").mkdir()
    for name in ("images.jsonl", "web.jsonl"):
        (tmp_path / "corpus" / name).write_text("")
    return tmp_path / "corpus"


def test_a_new_challenge_is_a_draft_that_visitors_do_not_see(client, draft):
    assert draft.is_published is False
    assert client.get(reverse("leaderboard:challenge", args=[draft.slug])).status_code == 404


def test_the_checklist_names_every_problem_and_publishing_waits_for_none(
    client, draft, tmp_path, settings
):
    assert publish_problems(draft) == ["the challenge has no task"]
    ends = timezone.now() + timedelta(days=30)
    Phase.objects.create(challenge=draft, name="final", starts_at=timezone.now(), ends_at=ends)
    searching = Task.objects.create(challenge=draft, task_id="multi-turn-qa", name="MT")
    Task.objects.create(challenge=draft, task_id="single-source-augmentation", name="SS",
                        image_search_enabled=False, web_search_enabled=False)  # fmt: skip
    private = Split.objects.create(task=searching, kind=Split.Kind.PRIVATE_TEST)
    problems = publish_problems(draft)
    assert problems == [
        "task multi-turn-qa lets agents search (image and web) but the challenge has no search "
        "corpus: import one (its admin page, or manage.py import_corpus) or turn search off",
        "split multi-turn-qa/private-test is a private test without a reveal time: set when "
        "results appear",
        "task single-source-augmentation has no split: import one",
    ]
    with pytest.raises(ValidationError):
        publish(draft)
    assert not Challenge.objects.get(pk=draft.pk).is_published

    private.reveal_at = ends - timedelta(days=1)
    private.save()
    (early,) = [p for p in publish_problems(draft) if "revealed" in p]
    assert "before the last phase ends" in early
    private.reveal_at = ends + timedelta(hours=1)
    private.save()
    store_corpus(draft, corpus(tmp_path))
    other = Task.objects.get(task_id="single-source-augmentation", challenge=draft)
    Split.objects.create(task=other, kind=Split.Kind.VALIDATION)
    assert publish_problems(draft) == []
    publish(draft)
    assert Challenge.objects.get(pk=draft.pk).is_published
    assert client.get(reverse("leaderboard:challenge", args=[draft.slug])).status_code == 200


def test_a_model_judge_must_answer_and_serve_its_model(draft, settings):
    task = Task.objects.create(
        challenge=draft, task_id="multi-turn-qa", name="MT", image_search_enabled=False,
        web_search_enabled=False, judge_kind=Task.JudgeKind.OPENAI, judge_model="fake-judge",
    )  # fmt: skip
    Split.objects.create(task=task, kind=Split.Kind.VALIDATION)
    with FakeOpenAI() as judge:
        settings.PODIUM_JUDGE_ENDPOINTS = {
            "default": {"base_url": judge.url, "model": "fake-judge", "api_key_env": ""}
        }
        assert publish_problems(draft) == []
        Task.objects.filter(pk=task.pk).update(judge_model="llama-judge")
        (problem,) = publish_problems(draft)
        assert problem == (
            "task multi-turn-qa: the judge endpoint does not serve 'llama-judge' (it serves "
            "fake-judge)"
        )
    (problem,) = publish_problems(draft)  # the server is gone
    assert problem.startswith("task multi-turn-qa: the judge endpoint does not answer (")


def test_the_admin_publishes_through_the_checklist(client, draft, make_user):
    admin_user = make_user("root", staff=True)
    admin_user.is_superuser = True
    admin_user.save()
    client.force_login(admin_user)
    page = client.get(reverse("admin:leaderboard_challenge_change", args=[draft.pk]))
    html = page.content.decode()
    assert "✗ the challenge has no task" in html
    assert 'name="is_published"' not in html  # only the actions publish
    changelist = reverse("admin:leaderboard_challenge_changelist")
    chosen = {"action": "publish", helpers.ACTION_CHECKBOX_NAME: [draft.pk]}
    shown = client.post(changelist, chosen, follow=True).content.decode()
    assert "Draft: the challenge has no task" in shown
    assert not Challenge.objects.get(pk=draft.pk).is_published


def test_import_corpus_checks_then_stores_the_corpus(draft, tmp_path):
    import shutil
    from io import StringIO

    from django.core.management import CommandError, call_command

    from evaluator.benchmarks.crag_mm.sample import write_sample

    write_sample(tmp_path / "sample")
    out = StringIO()
    call_command("import_corpus", str(tmp_path / "sample/corpus"), challenge=draft.slug, stdout=out)
    assert "draft-challenge: corpus " in out.getvalue() and "(new)" in out.getvalue()
    assert "web pages" in out.getvalue()
    call_command("import_corpus", str(tmp_path / "sample/corpus"), challenge=draft.slug, stdout=out)
    assert "(unchanged)" in out.getvalue()
    bad = tmp_path / "bad"
    shutil.copytree(tmp_path / "sample/corpus", bad)
    (bad / "web.jsonl").write_text('{"page_url": 3}\n')
    with pytest.raises(CommandError, match=r"not imported: .*web\.jsonl, line 1"):
        call_command("import_corpus", str(bad), challenge=draft.slug)


def test_the_admin_imports_a_search_corpus_checked_first(client, draft, make_user, tmp_path):
    import io
    import shutil
    import tarfile

    from evaluator.benchmarks.crag_mm.sample import write_sample
    from leaderboard.pipeline.bundles import corpus_sha256

    admin_user = make_user("root", staff=True)
    admin_user.is_superuser = True
    admin_user.save()
    client.force_login(admin_user)
    Task.objects.create(challenge=draft, task_id="multi-turn-qa", name="MT")
    write_sample(tmp_path / "sample")

    def tar_of(directory, arcname="corpus") -> io.BytesIO:
        data = io.BytesIO()
        with tarfile.open(fileobj=data, mode="w:gz") as tar:
            tar.add(directory, arcname=arcname)
        data.seek(0)
        data.name = "corpus.tar.gz"
        return data

    url = reverse("admin:leaderboard_challenge_change", args=[draft.pk])
    form = {"name": draft.name, "slug": draft.slug, "description": "", **_inline_management()}

    def upload(data) -> str:
        return client.post(url, {**form, "corpus_upload": data}, follow=True).content.decode()

    assert "none imported" in client.get(url).content.decode()
    bad = tmp_path / "bad"
    shutil.copytree(tmp_path / "sample/corpus", bad)
    (bad / "web.jsonl").write_text('{"page_url": 3}\n')
    shown = upload(tar_of(bad))
    assert "not imported:" in shown and "web.jsonl, line 1" in shown
    assert corpus_sha256(draft) is None  # nothing stored

    hostile = io.BytesIO()
    with tarfile.open(fileobj=hostile, mode="w") as tar:
        entry = tarfile.TarInfo("../escape.jsonl")
        entry.size = 2
        tar.addfile(entry, io.BytesIO(b"{}"))
    hostile.seek(0)
    hostile.name = "hostile.tar"
    assert "the uploaded archive:" in upload(hostile) and corpus_sha256(draft) is None

    shown = upload(tar_of(tmp_path / "sample/corpus"))
    sha256 = corpus_sha256(draft)
    assert sha256 and f"corpus {sha256[:12]} (new)" in shown and "web pages" in shown
    assert f"sha256 {sha256}" in client.get(url).content.decode()
    assert not any("search corpus" in problem for problem in publish_problems(draft))
    assert "(unchanged)" in upload(tar_of(tmp_path / "sample/corpus", arcname="."))


def _inline_management() -> dict[str, str]:
    """The phase and task inlines' management forms, empty (the admin form posts them)."""
    fields = {}
    for prefix in ("phases", "tasks"):
        fields.update({f"{prefix}-TOTAL_FORMS": "0", f"{prefix}-INITIAL_FORMS": "0"})
    return fields


def test_an_m2rag_task_judged_by_a_model_needs_a_vision_judge_that_answers(draft, settings):
    task = Task.objects.create(
        challenge=draft, task_id="m2rag", name="M2RAG", benchmark="m2rag",
        image_search_enabled=False, web_search_enabled=False,
        judge_kind=Task.JudgeKind.OPENAI, judge_model="fake-judge",
    )  # fmt: skip
    Split.objects.create(task=task, kind=Split.Kind.VALIDATION)
    with FakeOpenAI() as judge, FakeOpenAI() as vision:
        settings.PODIUM_JUDGE_ENDPOINTS = {
            "default": {"base_url": judge.url, "model": "fake-judge", "api_key_env": ""},
            "vlm": {"base_url": vision.url, "model": "fake-vlm", "api_key_env": ""},
            "vlm-ok": {"base_url": vision.url, "model": "fake-judge", "api_key_env": ""},
        }
        assert publish_problems(draft) == [
            "task m2rag: M2RAG judges placed images with a model that sees them: choose the "
            "task's vision judge endpoint (a name in PODIUM_JUDGE_ENDPOINTS whose model sees "
            "images, e.g. a vision-language model served by vLLM)"
        ]
        Task.objects.filter(pk=task.pk).update(vision_judge_endpoint="vlm")
        (problem,) = publish_problems(draft)
        assert problem == (
            "task m2rag: the vision judge: the judge endpoint does not serve 'fake-vlm' (it "
            "serves fake-judge)"
        )
        Task.objects.filter(pk=task.pk).update(vision_judge_endpoint="gone")
        (problem,) = publish_problems(draft)
        assert problem.startswith("task m2rag: the vision judge: unknown judge endpoint 'gone'")
        Task.objects.filter(pk=task.pk).update(vision_judge_endpoint="vlm-ok")
        assert publish_problems(draft) == []
    text, image = publish_problems(draft)  # both servers are gone
    assert text.startswith("task m2rag: ") and image.startswith("task m2rag: the vision judge: ")
    Task.objects.filter(pk=task.pk).update(judge_kind=Task.JudgeKind.RULES)
    assert publish_problems(draft) == []  # the rules judge sends no image


def test_the_admin_checklist_says_what_the_m2rag_task_lacks(client, draft, settings, make_user):
    Task.objects.create(
        challenge=draft, task_id="m2rag", name="M2RAG", benchmark="m2rag",
        image_search_enabled=False, web_search_enabled=False,
        judge_kind=Task.JudgeKind.OPENAI, judge_model="fake-judge",
    )  # fmt: skip
    settings.PODIUM_JUDGE_ENDPOINTS = {
        "default": {"base_url": "http://127.0.0.1:9/v1", "model": "fake-judge"}
    }
    admin_user = make_user("root", staff=True)
    admin_user.is_superuser = True
    admin_user.save()
    client.force_login(admin_user)
    page = client.get(reverse("admin:leaderboard_challenge_change", args=[draft.pk]))
    assert "choose the task&#x27;s vision judge endpoint" in page.content.decode()
