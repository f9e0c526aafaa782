"""Every model has a working admin: list (with filters and search) and add pages render."""

import pytest
from django.contrib import admin
from django.urls import reverse

from leaderboard import api_tokens
from leaderboard.models import (
    AnswerSimilarity,
    ApiToken,
    AuditItem,
    AuditLabel,
    ChallengeLabeller,
    ChallengeVersion,
    EvaluationRun,
    Headline,
    HubModel,
    ImageArchive,
    JudgeAudit,
    JudgePreview,
    KitFile,
    Mailing,
    PreviewFlip,
    PreviewRun,
    RankedBoard,
    RankedSlices,
    RunAction,
    RunUnits,
    SearchCorpus,
    Submission,
    SubmissionAction,
    SubmissionTask,
    TermsAcceptance,
    UnitSlices,
)


@pytest.fixture
def superuser(make_user):
    user = make_user(staff=True)
    user.is_superuser = True
    user.save()
    return user


def test_every_leaderboard_model_is_registered():
    from django.apps import apps

    models = set(apps.get_app_config("leaderboard").get_models())
    assert models <= set(admin.site._registry)


def test_admin_pages_render_with_data(client, superuser, teams, splits, make_entry):
    run = make_entry(teams["alpha"], splits["public-test"], 0.2)
    token, _ = api_tokens.create(superuser, "a laptop")
    client.force_login(superuser)
    for model, model_admin in admin.site._registry.items():
        if model._meta.app_label != "leaderboard":
            continue
        info = (model._meta.app_label, model._meta.model_name)
        listing = client.get(reverse("admin:{}_{}_changelist".format(*info)), {"q": "a"})
        assert listing.status_code == 200, model
        # HubModel: added by manage.py register_model on the nodes, which copies the files;
        # runs: by submitting; run and submission actions: by acting on them (the panel);
        # headlines, units and their slices: by storing scores;
        # ranked boards, their slices' statistics: by a change of results; challenge versions,
        # kit files: by importing a bundle; corpora: on the challenge's page or by a bundle;
        # judge audits: on their pages;
        # image archives: by the workers that build and run agents; a challenge's labellers:
        # by inviting them to an audit; API tokens: by their owners (the key is shown once);
        # mailings: by the messages page and runs' ends
        addable = model_admin.has_add_permission(listing.wsgi_request)
        read_only = (
            AnswerSimilarity,
            ApiToken,
            AuditItem,
            AuditLabel,
            ChallengeLabeller,
            ChallengeVersion,
            KitFile,
            ImageArchive,
            Mailing,
            SearchCorpus,
            HubModel,
            EvaluationRun,
            JudgeAudit,
            Headline,
            RankedBoard,
            RankedSlices,
            RunUnits,
            UnitSlices,
            RunAction,
            SubmissionAction,
            TermsAcceptance,
            SubmissionTask,
            JudgePreview,
            PreviewRun,
            PreviewFlip,
        )
        assert addable == (model not in read_only), model
        adding = client.get(reverse("admin:{}_{}_add".format(*info)))
        assert adding.status_code == (200 if addable else 403), model
    detail = reverse("admin:leaderboard_evaluationrun_change", args=[run.pk])
    assert client.get(detail).status_code == 200
    shown = client.get(reverse("admin:leaderboard_apitoken_change", args=[token.pk]))
    assert shown.status_code == 200 and "a laptop" in shown.content.decode()


def test_marking_baselines_and_refunds_from_the_submission_list(
    client, superuser, teams, splits, make_entry
):
    run = make_entry(teams["alpha"], splits["public-test"], 0.2)
    client.force_login(superuser)
    changelist = reverse("admin:leaderboard_submission_changelist")
    response = client.post(
        changelist, {"action": "mark_baseline", "_selected_action": [run.submission_id]}
    )
    assert response.status_code == 302
    submission = Submission.objects.get(pk=run.submission_id)
    assert submission.is_baseline and submission.consumes_quota  # the quota: the panel's
    assert EvaluationRun.objects.get(pk=run.pk).submission.is_baseline


def test_the_task_form_is_generated_from_the_benchmarks_settings_schema(client, superuser, task):
    from django.forms import model_to_dict

    from leaderboard.admin.settings_form import task_form
    from leaderboard.models import Task

    client.force_login(superuser)
    page = client.get(reverse("admin:leaderboard_task_change", args=[task.pk])).content.decode()
    assert 'name="setting_counting"' in page and 'name="setting_missing_variant"' in page
    assert "Protocol settings" in page
    visual = client.get(reverse("admin:leaderboard_task_add"), {"benchmark": "visual-rag"})
    assert 'name="setting_evaluated"' in visual.content.decode()
    assert 'name="setting_gcue_lambda"' in visual.content.decode()

    data = {k: v for k, v in model_to_dict(task).items() if v is not None}
    chosen = {"setting_counting": "kit-a", "setting_missing_variant": "kit-b"}
    form = task_form("crag-mm")(data={**data, **chosen}, instance=task)
    assert form.is_valid(), form.errors
    form.save()
    assert Task.objects.get(pk=task.pk).settings == {
        "counting": "kit-a",
        "missing_variant": "kit-b",
    }
    bad = task_form("crag-mm")(data={**data, "setting_counting": "kit-z"}, instance=task)
    assert not bad.is_valid() and "setting_counting" in bad.errors
    # M2RAG's vision judge is a judge endpoint the task names, not a benchmark setting
    m2rag = {**data, "benchmark": "m2rag", "setting_parsing": "strict", "primary_metric": "overall"}
    m2rag = {k: v for k, v in m2rag.items() if not k.endswith("search_enabled")}
    assert "setting_vision_model" not in task_form("m2rag")().fields
    form = task_form("m2rag")(data={**m2rag, "vision_judge_endpoint": ""}, instance=task)
    assert form.is_valid(), form.errors
    form.save()
    saved = Task.objects.get(pk=task.pk)
    assert (saved.settings, saved.vision_judge_endpoint) == ({"parsing": "strict"}, "")


def test_a_setting_that_may_be_null_is_optional_and_left_out_when_blank():
    from leaderboard.admin.settings_form import _field

    assert _field({"type": ["string", "null"]}).required is False
    assert _field({"type": "string"}).required is True
