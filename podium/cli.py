"""Podium's command line, over the REST API: submit an agent, follow it, read a leaderboard.

    python -m podium.cli submit --challenge crag-mm-2026 --archive agent.tar --method "My RAG"
    python -m podium.cli status 42 --wait     # follow its runs until they finish
    python -m podium.cli leaderboard crag-mm-2026 multi-turn-qa public-test
    python -m podium.cli leaderboard visual-rag-2026 visual-rag validation --setting gt_clue
    python -m podium.cli kit crag-mm-2026 --output kit/ --base-image   # the starter kit

The server and the token come from ``--url`` / ``--token`` or ``PODIUM_URL`` / ``PODIUM_TOKEN``
(a token from ``POST /api/token/`` or the admin). Uploads stream from disk with a progress bar.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

import httpx
from tqdm import tqdm

from podium.downloads import DownloadFailed, download

DEFAULT_URL = "http://127.0.0.1:8000"
FINISHED = ("done", "failed", "cancelled")  # a run's terminal states
ENVIRONMENT = (
    "environment: PODIUM_URL (the server, default http://127.0.0.1:8000), PODIUM_TOKEN (your "
    "API token: create it on your account page, /account/, or POST /api/token/)"
)
# Upload and reading times out per network operation, not for the whole transfer.
TIMEOUT = httpx.Timeout(60.0)


class CliError(Exception):
    """Something the user should read; printed without a traceback."""


class _ProgressReader:
    """A file read through this updates a progress bar; httpx streams multipart files by read."""

    def __init__(self, handle: IO[bytes], bar: tqdm) -> None:
        self.handle, self.bar = handle, bar

    def read(self, size: int = -1) -> bytes:
        data = self.handle.read(size)
        self.bar.update(len(data))
        return data

    def seek(self, offset: int, whence: int = 0) -> int:
        position = self.handle.seek(offset, whence)
        if whence == 0 and offset == 0:
            self.bar.reset()
        return position

    def tell(self) -> int:
        return self.handle.tell()

    def fileno(self) -> int:
        return self.handle.fileno()


class Client:
    """The API calls the commands make; errors become ``CliError`` with the server's words."""

    def __init__(self, url: str, token: str | None) -> None:
        headers = {"Authorization": f"Token {token}"} if token else {}
        base = url.rstrip("/") + "/api/"
        self.http = httpx.Client(base_url=base, headers=headers, timeout=TIMEOUT)

    def call(self, method: str, path: str, **kwargs: Any) -> Any:
        try:
            response = self.http.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise CliError(f"cannot reach {self.http.base_url}: {exc}") from None
        if response.is_error:
            raise CliError(f"{response.status_code} {response.reason_phrase}: {_detail(response)}")
        return response.json()

    def split_id(self, challenge: str, task: str, kind: str) -> int:
        params = {"challenge": challenge, "task": task}
        found = self.call("GET", "splits/", params=params)["results"]
        match = [s["id"] for s in found if s["kind"] == kind]
        if not match:
            kinds = ", ".join(s["kind"] for s in found) or "none"
            raise CliError(f"{challenge}/{task} has no split {kind!r} (splits: {kinds})")
        return match[0]


def _detail(response: httpx.Response) -> str:
    """The server's error message: DRF's ``detail`` or its messages per field."""
    try:
        body = response.json()
    except ValueError:
        return response.text[:500]
    if isinstance(body, dict) and set(body) == {"detail"}:
        return str(body["detail"])
    if isinstance(body, dict):
        parts = []
        for field, messages in body.items():
            text = " ".join(messages) if isinstance(messages, list) else str(messages)
            parts.append(text if field == "non_field_errors" else f"{field}: {text}")
        return "; ".join(parts)
    return str(body)


def submit(client: Client, args: argparse.Namespace) -> dict:
    data = {
        "challenge": args.challenge,
        "method_name": args.method,
        "description": args.description,
        "paper_url": args.paper_url,
        "code_url": args.code_url,
    }
    if args.team:
        data["team"] = args.team
    if args.ref:
        data.update(artifact_kind="registry-ref", registry_ref=args.ref)
        return client.call("POST", "submissions/", data=data)
    path = Path(args.archive or args.context)
    if not path.is_file():
        raise CliError(f"{path}: no such file")
    data["artifact_kind"] = "image-archive" if args.archive else "build-context"
    size = path.stat().st_size
    with (
        path.open("rb") as handle,
        tqdm(total=size, unit="B", unit_scale=True, desc=path.name, disable=args.quiet) as bar,
    ):
        files = {"artifact": (path.name, _ProgressReader(handle, bar), "application/x-tar")}
        return client.call("POST", "submissions/", data=data, files=files)


def status(client: Client, args: argparse.Namespace) -> dict:
    return client.call("GET", f"submissions/{args.submission_id}/")


def finished(body: dict) -> bool:
    runs = body.get("runs") or []
    if body.get("state") == "failed":
        return True
    return bool(runs) and all(r["state"] in FINISHED for r in runs)


def wait(client: Client, body: dict, args: argparse.Namespace) -> dict:
    """Poll the submission every ``--every`` seconds until its runs have finished (or its
    build failed), with a progress bar of the items answered; ``--timeout`` gives up."""
    started = time.monotonic()
    with tqdm(unit="item", desc=f"submission #{body['id']}", disable=args.quiet) as bar:
        while True:
            runs = body.get("runs") or []
            bar.total = sum(r["items_total"] for r in runs) or None
            bar.n = sum(r["items_done"] for r in runs)
            states = sorted({r["state"] for r in runs}) or [body["state"]]
            bar.set_postfix_str(", ".join(states))
            if finished(body):
                return body
            if args.timeout and time.monotonic() - started > args.timeout:
                raise CliError(f"submission #{body['id']} still running after {args.timeout} s")
            time.sleep(args.every)
            body = client.call("GET", f"submissions/{body['id']}/")


def leaderboard(client: Client, args: argparse.Namespace) -> dict:
    split_id = client.split_id(args.challenge, args.task, args.split)
    params = {"setting": args.setting} if args.setting else {}
    return client.call("GET", f"splits/{split_id}/leaderboard/", params=params)


def kit(client: Client, args: argparse.Namespace) -> dict:
    """The challenge's starter kit (and with ``--base-image``, a base image archive) into
    ``--output``, each verified against its sha256."""
    slug = args.challenge
    body = client.call("GET", f"challenges/{slug}/kit/")
    wanted = [(f"challenges/{slug}/kit/download/", body["filename"], body["sha256"], None)]
    if args.base_image is not None:
        images = {row["image"]: row for row in body["base_images"]}
        name = args.base_image or next(iter(images))
        if name not in images:
            raise CliError(f"{name!r} is not a base image of {slug} (one of: {', '.join(images)})")
        row = images[name]
        path = f"challenges/{slug}/kit/base-image/"
        wanted.append((path, row["filename"], row["sha256"], {"image": name}))
    output = Path(args.output)
    output.mkdir(parents=True, exist_ok=True)
    files = []
    for path, filename, sha256, params in wanted:
        try:
            got = download(
                client.http, path, output / filename, listed_sha256=sha256, params=params,
                quiet=args.quiet,
            )  # fmt: skip
        except DownloadFailed as exc:
            detail = f": {_detail(exc.response)}" if exc.response is not None else ""
            raise CliError(f"{exc}{detail}") from None
        files.append({**got.as_dict(), "fetched": got.fetched})
    return {"challenge": slug, "version": body["version"], "files": files}


def format_kit(body: dict) -> str:
    lines = [f"starter kit of {body['challenge']} (version {body['version'][:12]}):"]
    for file in body["files"]:
        how = "downloaded" if file["fetched"] else "already there"
        lines.append(f"  {file['path']}  {file['size']} bytes  sha256 {file['sha256']} ({how})")
    return "\n".join(lines)


def format_submission(body: dict) -> str:
    lines = [
        f"submission #{body['id']} {body['method_name']} (team {body['team']}, "
        f"{body['challenge']}): {body['state']}",
    ]
    if body.get("failure_reason"):
        lines.append(f"  failed: {body['failure_reason']}")
    for run in body.get("runs", []):
        progress = f"{run['items_done']}/{run['items_total']} items"
        reason = f"  {run['failure_reason']}" if run["failure_reason"] else ""
        where = f"{run['split_kind']}/{run['setting']}" if run.get("setting") else run["split_kind"]
        lines.append(
            f"  run #{run['id']:<6} {run['task_id']:<28} {where:<13} "
            f"{run['state']:<9} {progress}{reason}"
        )
    return "\n".join(lines)


def _shown(value: float | None, metric: dict) -> str:
    """A value as the API's metric declaration says (fractions x100)."""
    if value is None:
        return "-"
    if metric["scale"] == "count":
        return str(int(value))
    if metric["scale"] == "ratio":
        return f"{value:.2f}"
    return f"{value * 100 if metric['scale'].endswith('fraction') else value:.1f}"


def format_leaderboard(body: dict) -> str:
    """The board as text: its first headline columns (those its entries have: a setting's runs
    lack the others), then each entry's scores across settings, if any."""
    split = body["split"]
    declared = {metric["name"]: metric for metric in body["metrics"]}
    primary = declared[body["primary_metric"]]
    present = {name for entry in body["entries"] for name in entry["metrics"]}
    others = [
        m
        for m in body["metrics"]
        if m["headline"] and m is not primary and (not present or m["name"] in present)
    ][:3]
    setting = f" [{body['setting']}]" if body.get("setting") else ""
    lines = [
        f"{split['challenge']}/{split['task_id']}/{split['kind']}{setting}: ranked by "
        f"{primary['label']} (one entry per team: {body['entry_rule']})",
        f"{'rank':>4}  {'team':<20} {'method':<24} {primary['label'][:12]:>12} {'95% CI':>13} "
        + " ".join(f"{m['label'][:10]:>10}" for m in others),
    ]
    for entry in body["entries"]:
        rank = "base" if entry["is_baseline"] else str(entry["rank"] or "-")
        low, high = entry["primary_ci95"] or (None, None)
        interval = f"{_shown(low, primary)}..{_shown(high, primary)}"
        cells = " ".join(f"{_shown(entry['metrics'].get(m['name']), m):>10}" for m in others)
        lines.append(
            f"{rank:>4}  {entry['team'][:20]:<20} {entry['method_name'][:24]:<24} "
            f"{_shown(entry['primary'], primary):>12} {interval:>13} {cells}"
        )
    if not body["entries"]:
        lines.append("  (no entries yet)")
    across = [entry for entry in body["entries"] if entry.get("derived")]
    if across:
        lines.append("across settings:")
    for entry in across:
        values = " ".join(
            f"{name}={'-' if value is None else f'{value:.3f}'}"
            for name, value in entry["derived"].items()  # the server's order: gcue@5, ...
        )
        lines.append(f"      {entry['team'][:20]:<20} {entry['method_name'][:24]:<24} {values}")
    return "\n".join(lines)


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(
        prog="python -m podium.cli", description=__doc__.split("\n")[0], epilog=ENVIRONMENT
    )
    root.add_argument("--url", default=os.environ.get("PODIUM_URL", DEFAULT_URL))
    root.add_argument("--token", default=os.environ.get("PODIUM_TOKEN"))
    root.add_argument("--json", action="store_true", help="print the API's JSON answer")
    root.add_argument("--quiet", action="store_true", help="no progress bar")
    commands = root.add_subparsers(dest="command", required=True)

    sub = commands.add_parser("submit", help="submit an agent")
    sub.add_argument("--challenge", required=True, help="challenge slug")
    sub.add_argument("--team", help="team name (when you are in several)")
    what = sub.add_mutually_exclusive_group(required=True)
    what.add_argument("--archive", help="image archive from docker save (tar, tar.gz)")
    what.add_argument("--context", help="build context: a tar(.gz) with a Dockerfile at its top")
    what.add_argument("--ref", help="registry reference, e.g. ghcr.io/team/agent:1")
    sub.add_argument("--method", required=True, help="method name shown on the leaderboard")
    sub.add_argument("--description", default="")
    sub.add_argument("--paper-url", default="")
    sub.add_argument("--code-url", default="")
    _wait_options(sub)
    sub.set_defaults(run=submit, show=format_submission, needs_token=True)

    sub = commands.add_parser("status", help="a submission's state and its runs' progress")
    sub.add_argument("submission_id", type=int)
    _wait_options(sub)
    sub.set_defaults(run=status, show=format_submission, needs_token=True)

    sub = commands.add_parser("leaderboard", help="a split's ranked entries")
    sub.add_argument("challenge")
    sub.add_argument("task", help="task id, e.g. multi-turn-qa")
    sub.add_argument("split", help="validation, public-test or private-test")
    sub.add_argument(
        "--setting", help="the task's setting to rank (e.g. gt_clue; default: its first)"
    )
    sub.set_defaults(run=leaderboard, show=format_leaderboard, needs_token=False)

    sub = commands.add_parser("kit", help="download a challenge's starter kit, sha256-checked")
    sub.add_argument("challenge", help="challenge slug")
    sub.add_argument("--output", default=".", help="folder for the files (default: here)")
    sub.add_argument(
        "--base-image",
        nargs="?",
        const="",
        metavar="IMAGE",
        help="also the agent base image's docker save archive (default: the first base image)",
    )
    sub.set_defaults(run=kit, show=format_kit, needs_token=True)
    return root


def _wait_options(sub: argparse.ArgumentParser) -> None:
    sub.add_argument(
        "--wait", action="store_true", help="follow the runs until they finish; exit 1 if any fails"
    )
    sub.add_argument("--every", type=float, default=5.0, help="seconds between polls (--wait)")
    sub.add_argument("--timeout", type=float, default=0, help="give up after so many seconds")


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.needs_token and not args.token:
        print("error: give --token or set PODIUM_TOKEN", file=sys.stderr)
        return 2
    try:
        client = Client(args.url, args.token)
        body = args.run(client, args)
        if getattr(args, "wait", False):
            body = wait(client, body, args)
    except CliError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(body, indent=2) if args.json else args.show(body))
    if getattr(args, "wait", False) and not all(r["state"] == "done" for r in body["runs"]):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
