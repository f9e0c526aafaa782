"""``manage.py demo``: the demo challenges evaluated end to end, then the leaderboards served.

Imports the CRAG-MM, Visual-RAG, MRAG-Suite and M2RAG demo challenges from their bundles
(``examples/challenges/``, with the generated sample data; importing them again changes nothing);
makes their teams and the demo login; starts serving the site and says where (``--no-serve``:
no site), so a newcomer follows the runs on its pages; builds the agent base image offline;
submits the example agents through the web form's code path; starts a Celery worker and beat;
waits for every run with a progress bar; prints the rankings; then keeps serving.
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from leaderboard.demo import setup
from leaderboard.demo.processes import (
    CeleryProcesses,
    WebServer,
    rankings,
    resume_unfinished,
    wait_for_runs,
)
from leaderboard.models import Challenge, EvaluationRun

REPO = Path(__file__).resolve().parents[3]


class Command(BaseCommand):
    help = "Serve the demo challenges and evaluate them end to end (sample data, example agents)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--no-serve", action="store_true", help="serve nothing; stop after the rankings"
        )
        parser.add_argument("--addr", default="0.0.0.0:8000", help="where to serve the site")
        parser.add_argument("--timeout", type=float, default=1800, help="seconds to wait for runs")
        parser.add_argument("--concurrency", type=int, default=2, help="worker processes")

    def handle(self, *args: Any, **options: Any) -> None:
        say = self.stdout.write
        say("demo: sample data and the challenges")
        challenge = setup.challenge()
        visual_rag = setup.visual_rag_challenge()
        mrag = setup.mrag_challenge()
        m2rag = setup.m2rag_challenge()
        challenges = (challenge, visual_rag, mrag, m2rag)
        user = setup.demo_user(*challenges)
        serving = not options["no_serve"]
        log_dir = Path(settings.VAR_DIR) / "demo"
        # A plain `kill` stops the server, worker and beat too (the blocks clean up on exit).
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
        with contextlib.ExitStack() as processes:
            web = processes.enter_context(WebServer(REPO, options["addr"])) if serving else None
            if web is not None:
                self._announce(options["addr"])
            say("demo: agent base image (built offline; reused when up to date)")
            built = subprocess.run(["bash", str(REPO / "deploy/agent-base/build.sh")], cwd=REPO)
            if built.returncode != 0:
                raise CommandError("building the agent base image failed (see above)")
            say("demo: submitting the example agents")
            submitted = setup.submit_agents(challenge, user, REPO)
            submitted += setup.submit_agents(visual_rag, user, REPO, setup.VISUAL_RAG_AGENTS)
            submitted += setup.submit_agents(mrag, user, REPO, setup.MRAG_AGENTS)
            submitted += setup.submit_agents(m2rag, user, REPO, setup.M2RAG_AGENTS)
            for submission in submitted:
                say(f"  #{submission.pk} {submission.method_name} ({submission.team.name})")
            celery = processes.enter_context(CeleryProcesses(REPO, log_dir, options["concurrency"]))
            resumed = sum(resume_unfinished(c) for c in challenges)
            say(f"demo: Celery worker and beat started (logs in {log_dir}); {resumed} runs to go")
            alive = celery.alive if web is None else lambda: celery.alive() and web.alive()
            try:
                runs = wait_for_runs(challenges, alive, options["timeout"])
            except (RuntimeError, TimeoutError) as exc:
                raise CommandError(str(exc)) from exc
            failed = self._report(challenges, runs)
            if web is None:
                if failed:
                    raise CommandError(f"{failed} run(s) did not finish; see above")
                return
            say(
                f"\nEvery run has finished; still serving at {self._address(options['addr'])}. "
                "The worker keeps running: submissions from the web form are evaluated too. "
                "Ctrl-C stops everything."
            )
            with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C: the server stops too
                web.wait()

    @staticmethod
    def _address(addr: str) -> str:
        host, _, port = addr.rpartition(":")
        shown = "127.0.0.1" if host in ("", "0.0.0.0") else host
        return f"http://{shown}:{port}/"

    def _announce(self, addr: str) -> None:
        """Where the site is, said before the base image and the runs (minutes the first time):
        the runs' progress shows on its pages meanwhile."""
        slugs = (setup.SLUG, setup.VISUAL_RAG_SLUG, setup.MRAG_SLUG, setup.M2RAG_SLUG)
        self.stdout.write(
            f"\ndemo: serving at {self._address(addr)} now. Leaderboards: "
            + ", ".join(f"{self._address(addr)}c/{slug}/" for slug in slugs)
            + "\n"
            f"Sign in as {setup.LOGIN[0]} / {setup.LOGIN[1]} (organiser; admin at /admin/) and "
            "open My submissions to follow the runs as they go, or sign up at /accounts/signup/ "
            "(the confirmation mail is printed here). The boards fill as the runs finish.\n"
        )

    def _report(self, challenges: Sequence[Challenge], runs: list[EvaluationRun]) -> int:
        """Print every board and the runs that did not finish; how many did not."""
        failed = [run for run in runs if run.state != EvaluationRun.State.DONE]
        for run in failed:
            self.stderr.write(f"run #{run.pk} {run.state}: {run.failure_reason}")
        for challenge in challenges:
            self.stdout.write(f"\n== {challenge.name}")
            self.stdout.write("\n".join(rankings(challenge)))
        self.stdout.write(f"\n{len(runs) - len(failed)} of {len(runs)} runs done.")
        return len(failed)
