"""Faults at realistic length: each of Podium's services made unreachable mid-run for a minute
or minutes, with the production back-off, and what the runs went through.

Each fault is one ``python -m tests.faults.scenario`` (private PostgreSQL, Redis,
SeaweedFS's S3 server and the stand-in judge; a real Celery worker with beat; the counting agent),
run one after the other as ``tests/faults/process.py`` runs it (a process group of its own,
ended with all it started once it falls silent for longer than its waits allow); ``none`` is
the baseline. Needs the Docker engine and the agent base
image, and nothing else running on the ports it picks.

    python bench/faults.py [--runs 2] [--only redis,judge] [--json out.jsonl]

Printed: a Markdown table (the one in docs/benchmarks.md, "Faults (issue 12)").
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.faults import process  # noqa: E402

# fault -> seconds it stays down (Redis, S3 and the judge: after the first run reached judging)
OUTAGES = {"none": 0, "redis": 30, "postgres": 30, "s3": 60, "judge": 180}
# Podium's defaults for back-off; the reaper looks every 10 s and re-sends after a minute.
SETTINGS = ["--backoff-s", "10", "--backoff-max-s", "600", "--reaper-s", "10", "--resend-s", "60"]
COLUMNS = [
    ("fault", "fault"), ("down_s", "down (s)"), ("runs", "runs done/submitted"),
    ("turns", "turns"), ("turns_lost", "lost"), ("answers_stored_twice", "stored twice"),
    ("turns_asked_twice", "asked twice"), ("verdicts_missing", "unjudged"),
    ("verdicts_not_correct", "judged wrong"), ("quota_charged", "quota charged"),
    ("files_missing", "files lost"), ("recovered_s", "moving again (s)"),
    ("delay_s", "run delay (s)"),
]  # fmt: skip


def scenario(fault: str, runs: int) -> dict:
    options = ["--runs", str(runs), "--outage-s", str(OUTAGES[fault]), *SETTINGS]
    try:
        return process.run(fault, *options)
    except (process.Failed, process.Stalled) as exc:
        raise SystemExit(f"the scenario failed: {exc}") from None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=2, help="submissions per fault")
    parser.add_argument("--only", default=",".join(OUTAGES), help="comma-separated faults")
    parser.add_argument("--json", type=Path, help="also write each report here (JSON lines)")
    args = parser.parse_args()
    faults = [f for f in args.only.split(",") if f]
    unknown = sorted(set(faults) - set(OUTAGES))
    if unknown:
        parser.error(f"unknown fault(s) {', '.join(unknown)}; known: {', '.join(OUTAGES)}")
    reports = []
    for fault in faults:
        started = time.monotonic()
        report = scenario(fault, args.runs)
        report["wall_s"] = round(time.monotonic() - started, 1)
        reports.append(report)
        print(f"{fault}: {json.dumps(report)}", file=sys.stderr, flush=True)
    baseline = next((r["total_s"] for r in reports if r["fault"] == "none"), None)
    print("| " + " | ".join(title for _, title in COLUMNS) + " |")
    print("|" + " --- |" * len(COLUMNS))
    for report in reports:
        report["runs"] = f"{report['runs_done']}/{report['runs_submitted']}"
        report["delay_s"] = round(report["total_s"] - baseline, 1) if baseline else None
        cells = ["-" if report.get(key) is None else str(report[key]) for key, _ in COLUMNS]
        print("| " + " | ".join(cells) + " |")
    if args.json:
        args.json.write_text("".join(json.dumps(r) + "\n" for r in reports))


if __name__ == "__main__":
    main()
