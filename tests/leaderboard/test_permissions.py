"""What participants and anonymous users must never see."""

import re
from datetime import timedelta

import django.views.static
import pytest
from django.contrib.auth.models import AnonymousUser
from django.core.exceptions import PermissionDenied
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from django.utils import timezone

from leaderboard.models import EvaluationRun, ItemAnswer, ItemVerdict, Split, Submission, Task
from leaderboard.permissions import signed_in
from leaderboard.scores import store_scores
from leaderboard.splits import import_split_dir

from .factories import scores_dict, write_small_split

SECRET_ANSWER = "the-private-answer-text"
PUBLIC_ANSWER = "the-public-answer-text"


@pytest.fixture
def world(teams, splits, make_entry, make_user):
    alpha_public = make_entry(teams["alpha"], splits["public-test"], 0.3, method="alpha-m")
    alpha_private = EvaluationRun.objects.create(
        submission=alpha_public.submission,
        task=alpha_public.task,
        split=splits["private-test"],
        state=EvaluationRun.State.RUNNING,
        items_done=3,
        items_total=10,
        operator_detail="node gpu-7, container abc123",
    )
    beta_run = make_entry(teams["beta"], splits["public-test"], 0.2, method="beta-m")
    for run, text in ((alpha_public, PUBLIC_ANSWER), (alpha_private, SECRET_ANSWER)):
        ItemAnswer.objects.create(run=run, group="s1", item_key="i1", position=0, response=text)
    return {
        "alice": make_user("alice", team=teams["alpha"]),
        "bob": make_user("bob", team=teams["beta"]),
        "alpha_public": alpha_public,
        "alpha_private": alpha_private,
        "beta_run": beta_run,
    }


def run_url(run, name="run"):
    return reverse(f"leaderboard:{name}", args=[run.pk])


def test_a_participant_sees_only_the_own_teams_submissions(client, world):
    client.force_login(world["alice"])
    page = client.get(reverse("leaderboard:my-submissions")).content.decode()
    assert "alpha-m" in page and "beta-m" not in page


def test_a_build_log_is_shown_to_its_team_only(client, world):
    Submission.objects.filter(pk=world["alpha_public"].submission_id).update(
        build_log="Step 3/4 : RUN pip install <alpha-dep>"
    )
    client.force_login(world["alice"])
    page = client.get(reverse("leaderboard:my-submissions")).content.decode()
    assert "Build log (last lines)" in page and "RUN pip install &lt;alpha-dep&gt;" in page
    client.force_login(world["bob"])
    page = client.get(reverse("leaderboard:my-submissions")).content.decode()
    assert "alpha-dep" not in page


@pytest.mark.parametrize("name", ["run", "run-progress"])
def test_another_teams_runs_do_not_exist_for_a_participant(client, world, name):
    client.force_login(world["bob"])
    assert client.get(run_url(world["alpha_public"], name)).status_code == 404
    assert client.get(run_url(world["beta_run"], name)).status_code == 200


@pytest.mark.parametrize("name", ["run", "run-progress"])
def test_anonymous_users_are_sent_to_sign_in(client, world, name):
    response = client.get(run_url(world["alpha_public"], name))
    assert response.status_code == 302 and response["Location"].startswith(reverse("account_login"))


def test_per_turn_answers_only_off_the_private_test(client, world):
    client.force_login(world["alice"])
    public_page = client.get(run_url(world["alpha_public"])).content.decode()
    assert PUBLIC_ANSWER in public_page
    private_page = client.get(run_url(world["alpha_private"])).content.decode()
    assert SECRET_ANSWER not in private_page
    assert "never shown" in private_page
    assert "node gpu-7" not in private_page, "operator detail is for organisers only"


def test_organisers_see_private_turns_and_operator_detail(client, world, make_user, challenge):
    organiser = make_user()
    challenge.organisers.add(organiser)
    client.force_login(organiser)
    page = client.get(run_url(world["alpha_private"])).content.decode()
    assert SECRET_ANSWER in page and "node gpu-7" in page


def test_live_progress_endpoint(client, world):
    client.force_login(world["alice"])
    progress = client.get(run_url(world["alpha_private"], "run-progress")).json()
    queue = progress.pop("queue")  # no worker holds it: it waits (leaderboard.run_queue)
    assert (queue["stage"], queue["position"]) == ("running", 1)
    assert progress == {
        "id": world["alpha_private"].pk,
        "state": "running",
        "items_done": 3,
        "items_total": 10,
        "progress": 0.3,
        "failure_reason": "",
        "attempt": 0,
        "finished": False,
    }


def _all_patterns(resolver=None, prefix=""):
    for entry in (resolver or get_resolver()).url_patterns:
        if isinstance(entry, URLResolver):
            yield from _all_patterns(entry, prefix + str(entry.pattern))
        elif isinstance(entry, URLPattern):
            yield prefix + str(entry.pattern), entry.callback


def test_no_url_serves_stored_files(world, splits, tmp_path, make_user):
    client = Client(raise_request_exception=False)
    split = import_split_dir(
        splits["private-test"].task, "private-test", write_small_split(tmp_path / "split")
    )
    bundle = split.bundle.name
    assert split.bundle.storage.exists(bundle)
    patterns = list(_all_patterns())
    assert not [p for p, _ in patterns if "media" in p]
    assert django.views.static.serve not in [view for _, view in patterns]
    staff = make_user(staff=True)
    for user in (None, world["alice"], staff):
        if user:
            client.force_login(user)
        for path in (f"/media/{bundle}", f"/{bundle}", f"/static/../media/{bundle}"):
            assert client.get(path).status_code in (400, 404), path
        for page in (
            reverse("api:split-list"),
            reverse("api:split-detail", args=[split.pk]),
            reverse("leaderboard:challenge", args=["crag-mm-2026"]),
        ):
            body = client.get(page).content.decode()
            assert bundle not in body and split.sha256 not in body


def test_api_hides_other_teams_runs_and_submissions(client, world):
    client.force_login(world["bob"])
    runs = client.get(reverse("api:run-list")).json()["results"]
    assert {r["id"] for r in runs} == {world["beta_run"].pk}
    assert client.get(reverse("api:run-detail", args=[world["alpha_public"].pk])).status_code == 404
    submissions = client.get(reverse("api:submission-list")).json()["results"]
    assert [s["id"] for s in submissions] == [world["beta_run"].submission_id]
    assert Submission.objects.count() == 2


AGENT_LOG = "agent says: loading weights"


@pytest.fixture
def logged(world):
    for name in ("alpha_public", "alpha_private"):
        EvaluationRun.objects.filter(pk=world[name].pk).update(agent_log=f"{AGENT_LOG} ({name})")
    return world


def test_the_team_sees_its_agents_output_on_a_public_split_only(client, logged):
    client.force_login(logged["alice"])
    public_page = client.get(run_url(logged["alpha_public"])).content.decode()
    assert f'<pre id="agent-log">{AGENT_LOG} (alpha_public)</pre>' in public_page
    private_page = client.get(run_url(logged["alpha_private"])).content.decode()
    assert AGENT_LOG not in private_page
    assert "output on private-test runs is never shown" in private_page


def test_the_agents_output_is_escaped(client, logged):
    run = logged["alpha_public"]
    EvaluationRun.objects.filter(pk=run.pk).update(agent_log="<script>alert(1)</script>")
    client.force_login(logged["alice"])
    page = client.get(run_url(run)).content.decode()
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;alert(1)" in page


@pytest.mark.parametrize("who", ["staff", "organiser"])
def test_staff_and_organisers_always_see_the_agents_output(
    client, logged, make_user, challenge, who
):
    user = make_user(staff=who == "staff")
    if who == "organiser":
        challenge.organisers.add(user)
    client.force_login(user)
    for name in ("alpha_public", "alpha_private"):
        page = client.get(run_url(logged[name])).content.decode()
        assert f"{AGENT_LOG} ({name})" in page


def test_the_judge_transcript_goes_where_the_turns_go(client, world, make_user, challenge):
    from django.core.files.base import ContentFile

    for name in ("alpha_public", "alpha_private"):
        run = world[name]
        line = f'{{"key": "turn/i1", "judged": ["q", "gt", "{name}-answer"]}}\n'
        run.transcript.save(f"run-{run.pk}.jsonl", ContentFile(line.encode()), save=True)
    client.force_login(world["alice"])
    public = client.get(run_url(world["alpha_public"], "run-transcript"))
    assert public.status_code == 200 and public["Content-Type"] == "application/x-ndjson"
    assert b"alpha_public-answer" in b"".join(public.streaming_content)
    assert "Judge transcript" in client.get(run_url(world["alpha_public"])).content.decode()
    assert client.get(run_url(world["alpha_private"], "run-transcript")).status_code == 404
    assert "Judge transcript" not in client.get(run_url(world["alpha_private"])).content.decode()
    client.force_login(world["bob"])  # another team: as if the run did not exist
    assert client.get(run_url(world["alpha_public"], "run-transcript")).status_code == 404
    organiser = make_user()
    challenge.organisers.add(organiser)
    client.force_login(organiser)
    private = client.get(run_url(world["alpha_private"], "run-transcript"))
    assert b"alpha_private-answer" in b"".join(private.streaming_content)
    client.logout()
    anonymous = client.get(run_url(world["alpha_public"], "run-transcript"))
    assert anonymous.status_code == 302


def test_my_submissions_shows_scores_boards_and_chooses_the_final_entry(client, world, task):
    Task.objects.filter(pk=task.pk).update(entry_rule=Task.EntryRule.CHOSEN)
    client.force_login(world["alice"])
    page = client.get(reverse("leaderboard:my-submissions")).content.decode()
    board = reverse("leaderboard:leaderboard", args=[task.challenge.slug, task.task_id,
                                                     "public-test"])  # fmt: skip
    assert f'href="{board}"' in page
    assert "truthfulness 0.300" in page  # the stored overall primary score
    assert "Choose for final" in page
    submission = world["alpha_public"].submission
    url = reverse("leaderboard:choose-final", args=[submission.pk])
    shown = client.post(url, {"chosen": "1"}, follow=True).content.decode()
    assert "is your team&#x27;s final entry" in shown and "final entry</span>" in shown
    assert Submission.objects.get(pk=submission.pk).chosen_for_final
    client.force_login(world["bob"])  # another team's submission does not exist for bob
    assert client.post(url, {"chosen": "0"}).status_code == 404
    assert Submission.objects.get(pk=submission.pk).chosen_for_final


def test_organisers_list_every_submission_and_the_images_two_teams_share(
    client, world, make_user, challenge
):
    url = reverse("leaderboard:challenge-submissions", args=[challenge.slug])
    client.force_login(world["alice"])
    assert client.get(url).status_code == 403
    alpha, beta = world["alpha_public"].submission, world["beta_run"].submission
    Submission.objects.filter(pk__in=[alpha.pk, beta.pk]).update(image_digest="sha256:" + "a" * 64)
    Submission.objects.filter(pk=beta.pk).update(state=Submission.State.FAILED)
    organiser = make_user("org")
    challenge.organisers.add(organiser)
    client.force_login(organiser)
    assert (
        'aria-label="Organisers\' console"'
        in client.get(reverse("leaderboard:challenge", args=[challenge.slug])).content.decode()
    )
    page = client.get(url).content.decode()
    assert "alpha-m" in page and "beta-m" in page
    assert "1 image submitted by more than one team" in page
    assert "<strong>beta</strong>" in page and "<strong>alpha</strong>" in page
    failed = client.get(url, {"state": "failed"}).content.decode()
    assert "beta-m" in failed and "alpha-m" not in failed
    assert "alpha-m" in client.get(url, {"team": "alp"}).content.decode()
    # the figures: per day, teams, failure reasons, run hours per team
    Submission.objects.filter(pk=beta.pk).update(failure_reason="build failed: exit 3")
    start = timezone.now() - timedelta(hours=3)
    EvaluationRun.objects.filter(pk=world["beta_run"].pk).update(
        started_at=start, finished_at=start + timedelta(hours=1, minutes=30)
    )
    page = client.get(url).content.decode()
    assert "2 submissions from 2 teams" in page
    figures = page[page.index('id="figures"') :]
    assert "build failed: exit 3" in figures
    assert re.search(r"<td>beta</td><td class=\"num\">1</td><td class=\"num\">1\.50</td>", figures)


def test_a_public_run_page_shows_each_question_ground_truth_and_filters_by_verdict(client, world):
    run = world["alpha_public"]
    first = ItemAnswer.objects.get(run=run)
    wrong = ItemAnswer.objects.create(run=run, group="s1", item_key="i2", position=1, response="x")
    for answer, verdict, query in (
        (first, "correct", "What <b>fruit</b>?"),
        (wrong, "hallucination", "Which car?"),
    ):
        ItemVerdict.objects.create(
            answer=answer, verdict=verdict, judge_id="rules@1",
            detail={"query": query, "ground_truth": f"truth of {answer.item_key}"},
        )  # fmt: skip
    client.force_login(world["alice"])
    page = client.get(run_url(run)).content.decode()
    assert "What &lt;b&gt;fruit&lt;/b&gt;?" in page and "truth of i1" in page  # escaped
    assert "Which car?" in page and "truth of i2" in page
    wrong_only = client.get(run_url(run), {"verdict": "hallucination"}).content.decode()
    assert "Which car?" in wrong_only and "truth of i1" not in wrong_only
    assert 'href="?verdict=correct"' in wrong_only  # the filter's choices
    private = client.get(run_url(world["alpha_private"]), {"verdict": "correct"}).content.decode()
    assert "truth of" not in private and "never shown" in private


def test_my_submissions_hides_a_private_score_until_the_reveal(client, world, splits):
    store_scores(world["alpha_private"], scores_dict(0.77))
    client.force_login(world["alice"])
    page = client.get(reverse("leaderboard:my-submissions")).content.decode()
    assert "truthfulness 0.770" not in page and "hidden until" in page
    Split.objects.filter(pk=splits["private-test"].pk).update(reveal_at=timezone.now())
    page = client.get(reverse("leaderboard:my-submissions")).content.decode()
    assert "truthfulness 0.770" in page


def test_signed_in_is_the_account_and_refuses_anyone_else(make_user):
    ann = make_user("ann")
    assert signed_in(ann) is ann
    with pytest.raises(PermissionDenied, match="sign in first"):
        signed_in(AnonymousUser())
