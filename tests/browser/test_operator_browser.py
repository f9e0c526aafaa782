"""An operator's journey in a real browser: from the header to the operator page, a stuck run
re-queued in one click (its stage's message on its queue), another cancelled; every page shown
is checked by axe and kept as a screenshot, at 1400 and 390 px."""

from __future__ import annotations

import pytest

from leaderboard import operations
from leaderboard.models import EvaluationRun, RunAction
from tests.browser.test_journeys import Journey, screen  # noqa: F401 - fixture used by name
from tests.leaderboard.broker import broker_at, sent
from tests.services import redis_url

State = EvaluationRun.State
BROKER = redis_url("journeys")  # tests/services.py: its own database, emptied around each test


@pytest.fixture(autouse=True)
def _quick_broadcast(monkeypatch):
    monkeypatch.setattr(operations, "INSPECT_TIMEOUT_S", 0.2)


def test_an_operator_re_queues_a_stuck_run_and_cancels_another(
    screen,  # noqa: F811 - the fixture imported above
    pipeline_run,
    make_user,
    artifacts,
    settings,
):
    page, size = screen
    journey = Journey(page, "operator", size, artifacts)
    operator = make_user("oscar", staff=True)
    settings.PODIUM_HEARTBEAT_TIMEOUT_S = 60
    stuck = pipeline_run(State.RUNNING, worker="gpu-node-3:77", silent_s=900)
    judging = pipeline_run(State.JUDGING, worker="judge-node-1:12", silent_s=900)
    page.goto("/accounts/login/")
    page.fill("#id_login", "oscar")
    page.fill("#id_password", "pw-secret-123")
    page.locator("main form button[type=submit]").click()
    page.wait_for_load_state()
    with broker_at(BROKER) as broker:
        page.locator("header").get_by_role("link", name="Operations", exact=True).click()
        page.wait_for_url("**/operator/")
        row = page.locator(f"#attention-{stuck.pk}")
        assert "stuck: no heartbeat from gpu-node-3:77" in row.inner_text()
        assert "gpu-node-3" in page.locator("#worker-list").inner_text()
        journey.see("operator")
        row.get_by_role("button", name=f"Re-queue run #{stuck.pk}").click()
        page.wait_for_url("**/operator/")
        assert f"Run #{stuck.pk} re-queued." in journey.main_text()
        assert sent(broker, "gpu-l40s") == [("gpu.answer_run", {"run_id": stuck.pk})]
        journey.see("requeued")
        page.get_by_role("button", name=f"Cancel run #{judging.pk}").click()
        page.wait_for_url("**/operator/")
        assert f"Run #{judging.pk} cancelled." in journey.main_text()
        journey.see("cancelled")
    stuck.refresh_from_db()
    judging.refresh_from_db()
    assert (stuck.state, judging.state) == (State.QUEUED, State.CANCELLED)
    kinds = sorted(RunAction.objects.filter(by=operator).values_list("kind", flat=True))
    assert kinds == ["cancel", "requeue"]
