"""The three journeys through Podium in a real browser, on a wide screen and a phone:

- a visitor reads a challenge's pages, a leaderboard, its slices and a comparison, and meets a
  missing page and a private leaderboard not revealed yet;
- a participant signs up, verifies the address, signs in, makes a team, accepts the rules,
  submits an agent and finds it scored and ranked;
- an organiser makes a challenge, reads what stops it from being published, fixes that in the
  admin, publishes it, and re-judges a done run (saying why), which is logged.

Every page is checked by axe-core (no serious or critical violation) and kept as a full-page
screenshot in ``tests/artifacts/`` (``journey-<journey>-<width>-<step>-<page>.png``); at 390 px
no page may scroll sideways.

The Django admin's own markup is not Podium's to fix, so it is left out of the axe assertion:
on admin pages axe checks everything but the admin's header, sidebar and breadcrumbs (its
breadcrumb links fail link-in-text-block); on a challenge's change page only the publish
checklist (Django's filter_horizontal widget and tabular inlines fail aria-prohibited-attr,
label and select-name there). Admin pages may scroll sideways (the challenge's inlines are wide),
except the run action's page, which Podium writes.
"""

from __future__ import annotations

import re
import tarfile
from pathlib import Path

import pytest
from django.core import mail

from leaderboard.models import Challenge, EvaluationRun, RunAction, Split, Submission, Team
from tests.browser.axe import assert_accessible
from tests.browser.test_leaderboard_browser import finish_pipeline
from tests.leaderboard.broker import broker_at, sent
from tests.leaderboard.factories import write_small_split
from tests.services import redis_url

BROKER = redis_url("journeys")  # tests/services.py: its own database, emptied around each test
SIZES = {"1400": {"width": 1400, "height": 900}, "390": {"width": 390, "height": 844}}
PASSWORD = "a-long-pass-phrase-9"
CHALLENGE = "/c/crag-mm-2026/"
BOARD = f"{CHALLENGE}multi-turn-qa/public-test/"
PRIVATE_BOARD = f"{CHALLENGE}multi-turn-qa/private-test/"
PAGES = {
    "overview": "# CRAG-MM 2026\n\nAnswer questions about **images**, with search.\n",
    "rules": "1. One team per participant.\n2. No hand-labelled test answers.\n",
    "evaluation": (
        "| answer | score |\n| --- | --- |\n| correct | 1 |\n| missing | 0 |\n"
        "| hallucinated | -1 |\n"
    ),
    "data": "The validation split and the [sample](https://example.org/sample) are public.\n",
    "participate": "Sign up, make a team, download the starter kit, then submit.\n",
}
# What the Django admin draws around Podium's content on its pages.
ADMIN_CHROME = ["#header", "#nav-sidebar", "#toggle-nav-sidebar", ".breadcrumbs"]


class Journey:
    """One journey at one screen size: each page seen is screenshotted and checked."""

    def __init__(self, page, name: str, size: str, artifacts: Path) -> None:
        self.page, self.name, self.size, self.artifacts = page, name, size, artifacts
        self.width = SIZES[size]["width"]
        self.steps = 0

    def see(
        self, step: str, *, admin: bool = False, only: str | None = None, fits: bool | None = None
    ) -> None:
        """Screenshot the page shown as ``step`` and run axe on it: all of a Podium page; on an
        admin page, what is not the admin's chrome, or only ``only`` (the part Podium writes)
        when given. A page that ``fits`` (by default Podium's, not the admin's) may not scroll
        sideways."""
        page = self.page
        page.wait_for_load_state()
        self.steps += 1
        shot = self.artifacts / f"journey-{self.name}-{self.size}-{self.steps:02d}-{step}.png"
        page.screenshot(path=str(shot), full_page=True)
        where = f"the {self.name} journey at {self.width} px, step {self.steps} ({step})"
        if fits if fits is not None else not admin:
            width = page.evaluate("document.documentElement.scrollWidth")
            assert width <= self.width, f"{where}: {page.url} is {width} px wide"
        if not admin:
            assert_accessible(page, where)
        elif only is not None:
            assert_accessible(page, where, include=[only])
        else:
            assert_accessible(page, where, exclude=ADMIN_CHROME)

    def main_text(self) -> str:
        return self.page.inner_text("main")


@pytest.fixture(params=list(SIZES))
def screen(request, chromium, live_server):
    """A page in a fresh browser context at the parametrized size, and that size's name."""
    context = chromium.new_context(base_url=live_server.url, viewport=SIZES[request.param])
    context.set_default_timeout(15_000)
    yield context.new_page(), request.param
    context.close()


@pytest.fixture
def written(challenge: Challenge) -> Challenge:
    """The challenge with every page of its own written."""
    for name, text in PAGES.items():
        setattr(challenge, name, text)
    challenge.save()
    return challenge


@pytest.fixture
def entries(written, public_entries):
    """Two teams and an organisers' baseline on the written challenge's public test."""
    return public_entries


def click_link(page, name: str, within: str = "main") -> None:
    page.locator(within).get_by_role("link", name=name, exact=True).first.click()
    page.wait_for_load_state()


def test_a_visitor_reads_a_challenge_and_its_results(screen, entries, splits, artifacts):
    page, size = screen
    journey = Journey(page, "visitor", size, artifacts)
    page.goto("/")
    journey.see("challenges")
    click_link(page, "CRAG-MM 2026")
    assert page.url.endswith(CHALLENGE)
    journey.see("challenge")
    tabs = page.locator("#challenge-tabs")
    for name in PAGES:
        tabs.get_by_role("link", name=name.capitalize(), exact=True).click()
        page.wait_for_url(f"**?tab={name}")
        assert tabs.locator("[aria-current=page]").inner_text() == name.capitalize()
        journey.see(f"tab-{name}")
    assert page.locator("#page-participate").inner_text().startswith("Sign up, make a team")
    tabs.get_by_role("link", name="Leaderboards", exact=True).click()
    page.wait_for_url("**?tab=leaderboards")
    reveal = f"results appear on {splits['private-test'].reveal_at:%Y-%m-%d %H:%M} UTC"
    assert reveal in journey.main_text()
    journey.see("tab-leaderboards")

    page.locator("main li", has_text=re.compile("public test", re.I)).get_by_role(
        "link", name="leaderboard"
    ).click()
    page.wait_for_url(f"**{BOARD}")
    rows = page.locator("main table tbody tr")
    assert rows.count() == 3
    assert rows.first.locator("td").nth(1).inner_text().strip() == "beta"
    journey.see("leaderboard")

    click_link(page, "Slices")
    page.wait_for_url(f"**{BOARD}slices/**")
    assert page.locator("svg.chart").count() == 1
    journey.see("slices")

    click_link(page, "Compare")
    page.wait_for_url(f"**{BOARD}compare/**")
    journey.see("compare-choose")
    page.get_by_label("Entry A").select_option(label="beta-rag (beta)")
    page.get_by_label("Entry B").select_option(label="gamma-agent (gamma)")
    page.locator("main").get_by_role("button", name="Compare").click()
    page.wait_for_url(re.compile(r".*/compare/\?a=\d+&b=\d+"))
    headers = page.locator("main table thead th").all_inner_texts()
    assert [h.strip() for h in headers[1:]] == ["beta-rag", "gamma-agent"]
    journey.see("compare")

    response = page.goto("/c/no-such-challenge/")
    assert response.status == 404
    assert page.get_by_role("heading", level=1).inner_text() == "Not found"
    journey.see("not-found")

    response = page.goto(PRIVATE_BOARD)
    assert response.status == 403
    assert page.get_by_role("heading", level=1).inner_text() == "Not allowed"
    assert f"They appear on {splits['private-test'].reveal_at:%Y-%m-%d %H:%M} UTC" in (
        journey.main_text()
    )
    assert page.locator("link[rel=stylesheet]").count() == 1  # Podium's layout, styled
    journey.see("private-not-revealed")


def confirmation_link(address: str) -> str:
    (message,) = [m for m in mail.outbox if m.to == [address]]
    return re.search(r"https?://[^/\s]+(/accounts/confirm-email/\S+)", message.body)[1]


def test_a_participant_signs_up_and_reaches_the_leaderboard(screen, entries, artifacts):
    page, size = screen
    journey = Journey(page, "participant", size, artifacts)
    team_name = f"Deep Seers {size}"
    page.goto("/")
    click_link(page, "Sign up", within="header")
    page.wait_for_url("**/accounts/signup/")
    journey.see("signup")
    page.fill("#id_email", "zoe@example.org")
    page.fill("#id_username", "zoe")
    page.fill("#id_password1", PASSWORD)
    page.fill("#id_password2", PASSWORD)
    page.locator("main form button[type=submit]").click()
    page.wait_for_url("**/accounts/confirm-email/")
    journey.see("verification-sent")

    page.goto(confirmation_link("zoe@example.org"))
    journey.see("confirm-email")
    page.locator("main form button[type=submit]").click()
    page.wait_for_url("**/")
    journey.see("verified")
    # Signed in by the link; sign out and back in as one does on another day.
    page.locator("header").get_by_role("button", name="Sign out").click()
    page.wait_for_load_state()
    assert page.locator("header").get_by_role("link", name="Sign in").count() == 1
    click_link(page, "Sign in", within="header")
    journey.see("signin")
    page.fill("#id_login", "zoe")
    page.fill("#id_password", PASSWORD)
    page.locator("main form button[type=submit]").click()
    page.wait_for_load_state()
    assert page.locator("header").get_by_role("link", name="zoe").count() == 1

    click_link(page, "Teams", within="header")
    page.wait_for_url("**/teams/")
    journey.see("teams")
    page.get_by_label("Name").fill(team_name)
    page.locator("main").get_by_role("button", name="Create").click()
    page.wait_for_url(re.compile(r".*/teams/\d+/$"))
    assert "you are its captain" in journey.main_text()
    journey.see("team")

    page.goto(f"{CHALLENGE}?tab=rules")
    journey.see("rules")
    page.locator("main").get_by_role("button", name="I accept these rules").click()
    page.wait_for_url("**?tab=rules")
    assert "You accepted these rules on" in journey.main_text()
    journey.see("rules-accepted")

    with broker_at(BROKER) as broker:
        click_link(page, "Submit an agent")
        page.wait_for_url(f"**{CHALLENGE}submit/")
        journey.see("submit")
        page.check("input[name=artifact_kind][value=registry-ref]")
        page.fill("#id_registry_ref", "ghcr.io/deep-seers/agent:1")
        page.fill("#id_method_name", "seer-agent")
        page.locator("#submit-form button[type=submit]").click()
        page.wait_for_url("**/submissions/")
        submission = Submission.objects.get(method_name="seer-agent")
        assert submission.team.name == team_name
        (run,) = submission.runs.all()
        assert sent(broker, "build") == [("build.prepare_run", {"run_id": run.pk})]
    section = page.locator("main section", has_text="seer-agent")
    assert "queued" in section.locator("tbody tr").first.inner_text()
    journey.see("my-submissions-queued")

    finish_pipeline(run, 0.5)
    page.reload()
    row = section.locator("tbody tr").first
    assert "done" in row.inner_text() and "truthfulness 0.500" in row.inner_text()
    journey.see("my-submissions-scored")

    row.get_by_role("link", name=re.compile("public test", re.I)).click()
    page.wait_for_url(f"**{BOARD}")
    ours = page.locator("main table tbody tr", has_text=team_name)
    cells = ours.locator("td")
    assert cells.nth(0).inner_text().strip() == "1"
    assert cells.nth(2).inner_text().startswith("seer-agent")
    journey.see("leaderboard-ranked")


def split_tar(tmp_path: Path) -> Path:
    """A tar of a small validation split, as an organiser uploads it."""
    directory = write_small_split(tmp_path / "validation")
    out = tmp_path / "validation.tar"
    with tarfile.open(out, "w") as tar:
        tar.add(directory, arcname="validation")
    return out


def admin_action(page, row_text: str, action: str) -> None:
    """Tick the changelist row showing ``row_text`` and run ``action`` on it."""
    page.locator("#result_list tbody tr", has_text=row_text).locator("input.action-select").check()
    page.select_option("select[name=action]", action)
    page.locator("#changelist-form button[name=index]").click()
    page.wait_for_load_state()


def messages_shown(page) -> str:
    return " ".join(page.locator("ul.messagelist li").all_inner_texts())


def test_an_organiser_publishes_a_challenge_and_rejudges_a_run(
    screen, make_user, make_entry, artifacts, tmp_path
):
    page, size = screen
    journey = Journey(page, "organiser", size, artifacts)
    organiser = make_user("olga", staff=True)
    organiser.is_superuser = True
    organiser.save()
    page.goto("/accounts/login/")
    journey.see("signin")
    page.fill("#id_login", "olga")
    page.fill("#id_password", "pw-secret-123")
    page.locator("main form button[type=submit]").click()
    page.wait_for_load_state()
    click_link(page, "Admin", within="header")
    page.wait_for_url("**/admin/")
    journey.see("admin", admin=True)

    # An empty challenge: a name, its slug filled in from it.
    page.goto("/admin/leaderboard/challenge/add/")
    page.fill("#id_name", "Draft Cup")
    page.locator("#id_name").blur()
    assert page.input_value("#id_slug") == "draft-cup"
    page.locator("input[name=_continue]").click()
    page.wait_for_url(re.compile(r".*/admin/leaderboard/challenge/\d+/change/"))
    challenge = Challenge.objects.get(slug="draft-cup")
    assert not challenge.is_published
    checklist = page.locator(".field-publish_checklist")
    assert "✗ the challenge has no task" in checklist.inner_text()
    journey.see("challenge-draft", admin=True, only=".field-publish_checklist")

    page.goto("/admin/leaderboard/challenge/")
    admin_action(page, "Draft Cup", "publish")
    assert "Draft Cup: the challenge has no task" in messages_shown(page)
    journey.see("publish-refused", admin=True)

    # What the checklist names: a task (no search, so no corpus needed), then its split.
    page.goto("/admin/leaderboard/task/add/")
    page.select_option("#id_challenge", label="Draft Cup")
    page.fill("#id_task_id", "multi-turn-qa")
    page.fill("#id_name", "Multi-turn QA")
    page.uncheck("#id_image_search_enabled")
    page.uncheck("#id_web_search_enabled")
    page.locator("input[name=_save]").click()
    page.wait_for_url("**/admin/leaderboard/task/")
    assert "was added successfully" in messages_shown(page)
    page.goto(f"/admin/leaderboard/challenge/{challenge.pk}/change/")
    assert "✗ task multi-turn-qa has no split: import one" in checklist.inner_text()
    journey.see("challenge-needs-split", admin=True, only=".field-publish_checklist")

    page.goto("/admin/leaderboard/split/add/")
    page.select_option("#id_task", label="draft-cup/multi-turn-qa")
    page.select_option("#id_kind", "validation")
    page.set_input_files("#id_upload", str(split_tar(tmp_path)))
    page.locator("input[name=_save]").click()
    page.wait_for_url("**/admin/leaderboard/split/")
    split = Split.objects.get(task__challenge=challenge)
    assert (split.kind, split.groups) == ("validation", 3)
    page.goto(f"/admin/leaderboard/challenge/{challenge.pk}/change/")
    assert checklist.inner_text().strip().endswith("nothing stops publishing")
    journey.see("challenge-ready", admin=True, only=".field-publish_checklist")

    page.goto("/admin/leaderboard/challenge/")
    admin_action(page, "Draft Cup", "publish")
    assert "Draft Cup is published" in messages_shown(page)
    assert Challenge.objects.get(pk=challenge.pk).is_published
    journey.see("published", admin=True)
    page.goto("/c/draft-cup/")
    assert page.get_by_role("heading", level=1).inner_text() == "Draft Cup"
    journey.see("challenge-public")

    # A team's done run, re-judged: the admin asks why first, then logs it.
    run = make_entry(Team.objects.create(name="delta"), split, 0.4, method="delta-rag")
    with broker_at(BROKER) as broker:
        page.goto("/admin/leaderboard/evaluationrun/")
        admin_action(page, "delta-rag", "rejudge")
        assert page.get_by_role("heading", level=1).inner_text() == "Re-judge 1 run(s)?"
        assert run.state == EvaluationRun.State.DONE
        journey.see("rejudge-why", admin=True, only="#content", fits=True)  # Podium's form
        page.get_by_label("Why (kept with the action").fill("the judge prompt was fixed")
        page.locator("#content input[type=submit]").click()
        page.wait_for_url("**/admin/leaderboard/evaluationrun/")
        assert "Re-judge: 1 run(s)" in messages_shown(page)
        assert sent(broker, "judge") == [("judge.judge_run", {"run_id": run.pk})]
    journey.see("rejudged", admin=True)
    (action,) = RunAction.objects.filter(run=run)
    assert (action.kind, action.by) == ("rejudge", organiser)
    assert action.why == "the judge prompt was fixed"
    assert EvaluationRun.objects.get(pk=run.pk).state == EvaluationRun.State.JUDGING

    page.goto(f"/admin/leaderboard/evaluationrun/{run.pk}/change/")
    logged = page.locator("#content").inner_text()
    assert "the judge prompt was fixed" in logged and "olga" in logged
    journey.see("run-logged", admin=True)
    page.goto("/admin/leaderboard/runaction/")
    assert page.locator("#result_list tbody tr", has_text="the judge prompt was fixed").count() == 1
    journey.see("run-actions", admin=True)
