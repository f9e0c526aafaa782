"""The submission form's script asks the quota preflight before sending the file: a spent quota
is shown at once and nothing is posted; with quota left, only the ticked task is evaluated."""

from __future__ import annotations

import pytest

from leaderboard.models import Submission, Task
from tests.leaderboard.broker import broker_at
from tests.leaderboard.submit_support import image_archive
from tests.services import redis_url

BROKER = redis_url("e2e")  # tests/services.py: its own database, emptied around each test

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def ann(splits, make_user, teams):
    for split in splits.values():
        split.bundle.name, split.items = f"splits/{split.kind}.tar", 4
        split.save(update_fields=["bundle", "items"])
    Task.objects.update(splits_selectable=True, quota_concurrent=None)
    return make_user("ann", team=teams["alpha"])


def _sign_in(page) -> None:
    page.goto("/c/crag-mm-2026/submit/")
    page.fill("#id_login", "ann")
    page.fill("#id_password", "pw-secret-123")
    page.click("button:has-text('Sign in')")
    page.wait_for_url("**/c/crag-mm-2026/submit/")


def test_a_spent_quota_is_refused_before_the_upload(page, ann, tmp_path):
    posts: list[str] = []
    page.on("request", lambda r: posts.append(r.url) if r.method == "POST" else None)
    _sign_in(page)
    posts.clear()  # the sign-in's own
    Task.objects.update(quota_total=0)
    page.set_input_files("#id_artifact", str(image_archive(tmp_path / "agent.tar")))
    page.fill("#id_method_name", "refused-agent")
    page.click("#submit-form button[type=submit]")
    notice = page.locator("#submit-form .preflight")
    notice.wait_for(state="visible")
    assert notice.inner_text() == (
        "Team alpha: all 0 submissions allowed on task multi-turn-qa are used"
    )
    assert posts == [] and not Submission.objects.exists()
    assert not page.locator(".upload-progress").is_visible()

    Task.objects.update(quota_total=None)
    with broker_at(BROKER):
        page.uncheck("input[name=splits][value='multi-turn-qa/private-test']")
        page.click("#submit-form button[type=submit]")
        page.wait_for_url("**/submissions/")
    submission = Submission.objects.get()
    assert sorted(r.split.kind for r in submission.runs.all()) == ["public-test", "validation"]
    assert "Evaluated on multi-turn-qa (validation, public-test)" in page.inner_text("main")


def test_a_build_context_the_challenge_cannot_run_is_refused_before_the_upload(
    page, ann, tmp_path, settings
):
    """The official CRAG-MM kit's layout, gzipped: the page reads its Dockerfile and
    aicrowd.json and the preflight refuses its base and its model, naming what is allowed."""
    import json

    from leaderboard.models import Challenge, HubModel
    from tests.leaderboard.submit_support import write_tar

    settings.PODIUM_BUILD_BASE_IMAGES = ["podium/agent-base:py3.11", "podium/agent-base:cuda12"]
    HubModel.objects.create(challenge=Challenge.objects.get(), hub_id="org/tiny", snapshot="a" * 40)
    kit = {"hf_models": [{"repo_id": "meta-llama/Llama-3.2-1B-Instruct", "revision": "main"}]}
    members = {
        "./Dockerfile": b"FROM python:3.10-slim-bookworm\nCOPY . /agent\n",
        "./aicrowd.json": json.dumps(kit).encode(),
        "./agents/user_config.py": b"UserAgent = None\n",
    }
    context = write_tar(tmp_path / "kit.tar.gz", members, compression="gz")
    posts: list[str] = []
    page.on("request", lambda r: posts.append(r.url) if r.method == "POST" else None)
    _sign_in(page)
    posts.clear()
    page.check("input[name=artifact_kind][value=build-context]")
    page.set_input_files("#id_artifact", str(context))
    page.fill("#id_method_name", "official-kit")
    page.click("#submit-form button[type=submit]")
    notice = page.locator("#submit-form .preflight")
    notice.wait_for(state="visible")
    assert notice.inner_text() == (
        "CRAG-MM 2026 does not provide meta-llama/Llama-3.2-1B-Instruct@main: the models agents "
        "may load are org/tiny@main kit.tar.gz: Dockerfile line 1: FROM "
        "'python:3.10-slim-bookworm' is not one of the base images this challenge allows (or an "
        "earlier stage of this Dockerfile); the allowed bases are podium/agent-base:py3.11, "
        "podium/agent-base:cuda12"
    )
    assert [url.split("/", 3)[3] for url in posts] == ["api/challenges/crag-mm-2026/quota/"]
    assert not Submission.objects.exists() and not page.locator(".upload-progress").is_visible()
