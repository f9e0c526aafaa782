"""The Compose stack's web service as a test uses it (``test_compose_stack.py``): an organiser
made in the web container, the REST API with that organiser's token, the demo challenge's bundle
as a zip."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.deploy.compose_stack import Stack, wait_for

SLUG = "crag-mm-demo"
TEAM = "Abstainers"
PASSWORD = "compose-e2e-password"
# What to make in the stack before the API can be used: the organiser (staff: may import a
# challenge) with a verified address, in one team.
MAKE_ORGANISER = f"""
from allauth.account.models import EmailAddress
from django.contrib.auth.models import User
from leaderboard.models import Membership, Team
user = User.objects.create_superuser("organiser", "organiser@example.org", "{PASSWORD}")
EmailAddress.objects.create(user=user, email=user.email, verified=True, primary=True)
Membership.objects.create(team=Team.objects.create(name="{TEAM}"), user=user)
"""
ACCEPT_RULES = f"""
from django.contrib.auth.models import User
from leaderboard.models import Challenge
from leaderboard.pages import accept_rules, must_accept_rules
user, challenge = User.objects.get(username="organiser"), Challenge.objects.get(slug="{SLUG}")
if must_accept_rules(user, challenge):
    accept_rules(user, challenge)
"""


def make_organiser(stack: Stack) -> None:
    stack.exec_python("web", "manage.py", "shell", "-c", MAKE_ORGANISER)


def accept_rules(stack: Stack) -> None:
    stack.exec_python("web", "manage.py", "shell", "-c", ACCEPT_RULES)


class Api:
    """The web service's REST API with the organiser's token."""

    def __init__(self, stack: Stack) -> None:
        self.stack = stack
        answer = httpx.post(
            f"{stack.site}/api/token/",
            data={"username": "organiser", "password": PASSWORD, "name": "e2e"},
            timeout=30,
        )
        assert answer.status_code == 200, answer.text
        self.headers = {"Authorization": f"Token {answer.json()['token']}"}

    def get(self, path: str, **params: str) -> httpx.Response:
        answer = httpx.get(
            f"{self.stack.site}{path}", headers=self.headers, params=params, timeout=60
        )
        assert answer.status_code == 200, (path, answer.status_code, answer.text[:2000])
        return answer

    def post(self, path: str, data: dict[str, Any], files: dict[str, Any]) -> dict[str, Any]:
        answer = httpx.post(
            f"{self.stack.site}{path}", headers=self.headers, data=data, files=files, timeout=300
        )
        assert answer.status_code in (200, 201), (path, answer.status_code, answer.text[:3000])
        return dict(answer.json())

    def runs(self, submission: int) -> list[dict[str, Any]]:
        found = self.get(f"/api/submissions/{submission}/").json()
        if found["state"] in ("failed", "podium-failed", "cancelled"):
            pytest.fail(f"submission {submission} failed: {found}\n{self.stack.logs()}")
        return list(found["runs"])

    def submit(self, method: str, context: bytes, task: str) -> int:
        data = {
            "challenge": SLUG, "team": TEAM, "artifact_kind": "build-context",
            "method_name": method, "tasks": [task],
        }  # fmt: skip
        return int(
            self.post("/api/submissions/", data, {"artifact": (f"{method}.tar", context)})["id"]
        )

    def wait_done(self, submission: int, timeout_s: float) -> list[dict[str, Any]]:
        def finished() -> bool:
            runs = self.runs(submission)
            return bool(runs) and all(r["state"] in ("done", "failed", "cancelled") for r in runs)

        wait_for(f"submission {submission}'s runs", finished, timeout_s, self.stack)
        return self.runs(submission)

    def answers(self, task: str) -> list[dict[str, Any]]:
        """Every answer stored for the task's runs (the export: organisers only)."""
        text = self.get(f"/api/challenges/{SLUG}/answers.jsonl").text
        rows = [json.loads(line) for line in text.splitlines() if line.strip()]
        return [row for row in rows if row["task"] == task]

    def state(self, task: str) -> dict[str, Any]:
        """What must survive a restart: the submissions with their runs, the answers."""
        submissions = self.get("/api/submissions/").json()
        rows = submissions["results"] if isinstance(submissions, dict) else submissions
        return {
            "submissions": sorted(
                (
                    s["id"],
                    s["method_name"],
                    sorted((r["id"], r["state"], r["items_done"]) for r in s["runs"]),
                )
                for s in rows
            ),
            "answers": sorted((a["run"], a["item_key"], a["response"]) for a in self.answers(task)),
        }


def demo_bundle_zip(tmp: Path) -> bytes:
    """The CRAG-MM demo challenge's bundle with its generated data (as the demo makes it)."""
    from leaderboard.demo.setup import bundle

    directory = bundle(SLUG, "crag-mm", under=tmp / "bundles")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as bundled:
        for path in sorted(directory.rglob("*")):
            if path.is_file() and not path.name.startswith("."):  # the demo's marker
                bundled.write(path, path.relative_to(directory).as_posix())
    return buffer.getvalue()
