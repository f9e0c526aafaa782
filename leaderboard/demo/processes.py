"""The demo's processes (the web server, Celery's worker and beat), waiting for the runs, and the
rankings."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType

from django.db.models import Sum
from tqdm import tqdm

from leaderboard import overall_board
from leaderboard.board_store import board, entries
from leaderboard.models import Challenge, EvaluationRun, Split
from leaderboard.overall import Overall
from leaderboard.ranking import columns
from leaderboard.tasks import dispatch_stage
from podium.celery import app

State = EvaluationRun.State


class Subprocesses:
    """Processes started by a block, stopped (SIGTERM, then SIGKILL after 30 s) when it ends."""

    def __init__(self, repo: Path) -> None:
        self.repo = repo
        self.processes: list[subprocess.Popen[bytes]] = []

    def alive(self) -> bool:
        return all(process.poll() is None for process in self.processes)

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in self.processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


class CeleryProcesses(Subprocesses):
    """``celery worker`` on every queue and ``celery beat`` (the reaper), as subprocesses
    logging to ``log_dir``."""

    def __init__(self, repo: Path, log_dir: Path, concurrency: int = 2) -> None:
        super().__init__(repo)
        self.log_dir = log_dir
        self.concurrency = concurrency

    def __enter__(self) -> CeleryProcesses:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        queues = ",".join(queue.name for queue in app.conf.task_queues)
        celery = [sys.executable, "-m", "celery", "-A", "podium"]
        self._start(
            "worker",
            [*celery, "worker", "-Q", queues, "-c", str(self.concurrency), "-n", "demo@%h",
             "--without-gossip", "--without-mingle", "-l", "info"],
        )  # fmt: skip
        self._start("beat", [*celery, "beat", "-s", str(self.log_dir / "beat-schedule")])
        return self

    def _start(self, name: str, command: list[str]) -> None:
        log = (self.log_dir / f"{name}.log").open("ab")
        self.processes.append(
            subprocess.Popen(command, cwd=self.repo, stdout=log, stderr=subprocess.STDOUT)
        )


class WebServer(Subprocesses):
    """``manage.py runserver`` at ``addr`` as a subprocess, started first so the site answers
    while the demo builds and evaluates; its output (requests, the mail the console backend
    prints) goes to the terminal."""

    def __init__(self, repo: Path, addr: str) -> None:
        super().__init__(repo)
        self.addr = addr

    def __enter__(self) -> WebServer:
        command = [sys.executable, "manage.py", "runserver", "--noreload", self.addr]
        self.processes.append(subprocess.Popen(command, cwd=self.repo))
        return self

    def wait(self) -> int:
        """Until the server stops (Ctrl-C, ``kill``); its exit status."""
        return self.processes[0].wait()


def resume_unfinished(challenge: Challenge) -> int:
    """Send the stage task of every unfinished run again (an earlier demo may have stopped
    mid-run; a duplicate message is harmless: the task finds the run is not its own)."""
    runs = EvaluationRun.objects.filter(submission__challenge=challenge).exclude(
        state__in=EvaluationRun.TERMINAL_STATES
    )
    count = 0
    for run in runs.select_related("task"):
        stage = run.stage or State.BUILDING
        if run.state in EvaluationRun.ACTIVE_STATES:
            run.move_to(State.QUEUED, operator_detail="resumed by manage.py demo")
        dispatch_stage(run, stage)
        count += 1
    return count


def wait_for_runs(
    challenges: Sequence[Challenge],
    alive: Callable[[], bool],
    timeout_s: float,
    every_s: float = 1.0,
) -> list[EvaluationRun]:
    """Wait, with a progress bar over all items, until every run of the challenges finished."""
    runs = EvaluationRun.objects.filter(submission__challenge__in=list(challenges))
    total = runs.aggregate(n=Sum("items_total"))["n"] or 0
    deadline = time.monotonic() + timeout_s
    with tqdm(total=total, unit="item", desc="evaluating", dynamic_ncols=True) as bar:
        while True:
            done = runs.aggregate(n=Sum("items_done"))["n"] or 0
            finished = runs.filter(state__in=EvaluationRun.TERMINAL_STATES).count()
            bar.update(max(0, done - bar.n))
            bar.set_postfix_str(f"{finished}/{runs.count()} runs finished")
            if finished == runs.count():
                return list(runs.order_by("pk"))
            if not alive():
                raise RuntimeError("a Celery process stopped; see its log under var/demo/")
            if time.monotonic() > deadline:
                raise TimeoutError(f"runs still unfinished after {timeout_s:.0f} s")
            time.sleep(every_s)


def rankings(challenge: Challenge) -> list[str]:
    """Every leaderboard of the challenge (task x split x setting) as text lines (its first
    three columns), and each submission's scores across the settings (gCUE) after its split;
    then its overall boards, when it has them."""
    lines = []
    splits = Split.objects.current().filter(task__challenge=challenge).select_related("task")
    for split in splits.order_by("task__order", "kind"):
        for setting in split.task.run_settings():
            lines += _board_lines(split, setting)
        derived = board(split, split.task.run_settings()[0])
        for entry in derived.entries:
            values = derived.derived.get(entry.submission_id, {})
            if values:
                shown = "  ".join(
                    f"{name} {'undefined' if v is None else f'{v:.3f}'}"
                    for name, v in sorted(values.items())
                )
                lines.append(f"  across settings: {entry.method_name:<20} {shown}")
    return lines + _overall_lines(challenge)


def _overall_lines(challenge: Challenge) -> list[str]:
    """The challenge's overall board on each split kind, when its bundle declares one."""
    overall = Overall.of(challenge)
    if overall is None:
        return []
    lines = []
    for kind in overall_board.kinds(challenge, overall):
        found = overall_board.board(overall, kind, overall_board.splits(challenge, overall, kind))
        lines += [
            f"\n{found.title} / {kind} ({found.method})",
            f"  {'rank':>4}  {'team':<16} score",
        ]
        lines += [f"  {line.rank:>4}  {line.team:<16} {line.score:.3f}" for line in found.lines]
    return lines


def _board_lines(split: Split, setting: str) -> list[str]:
    shown = columns(split.task, setting)[:3]
    named = f" / {setting}" if setting else ""
    lines = [
        f"\n{split.task.task_id} / {split.kind}{named}",
        f"  {'rank':>4}  {'method':<20} {'team':<16} "
        + " ".join(f"{m.label[:13]:>13}" for m in shown),
    ]
    for entry in entries(split, setting):
        rank = "-" if entry.rank is None else str(entry.rank)
        cells = " ".join(f"{m.shown(entry.metrics.get(m.name)):>13}" for m in shown)
        lines.append(f"  {rank:>4}  {entry.method_name:<20} {entry.team:<16} {cells}")
    return lines
