"""Podium's command line, over the REST API: submit an agent, follow it, read a leaderboard.

    python -m podium.cli submit --challenge crag-mm-2026 --archive agent.tar --method "My RAG"
    python -m podium.cli submit ... --task multi-turn-qa --split multi-turn-qa/validation
    python -m podium.cli quota --challenge crag-mm-2026   # what the team may still submit
    python -m podium.cli status 42 --wait     # follow its runs until they finish, then scores
    python -m podium.cli leaderboard crag-mm-2026 multi-turn-qa public-test
    python -m podium.cli leaderboard visual-rag-2026 visual-rag validation --setting gt_clue
    python -m podium.cli kit crag-mm-2026 --output kit/ --base-image   # the starter kit
    python -m podium.cli challenge import examples/challenges/crag-mm-demo   # organisers

The server and the token come from ``--url`` / ``--token`` or ``PODIUM_URL`` / ``PODIUM_TOKEN``
(a token made on your account page, ``/account/``, or by ``POST /api/token/``). ``--json``
(anywhere on the line) prints one JSON document on stdout, an error as ``{"error": ...}``.
``submit`` asks the server first whether the team may submit (quota, phase, rules, the tasks
chosen, the file's size; for a build context, the base images its Dockerfile starts from and
the models its ``aicrowd.json`` or ``podium.json`` declares) and uploads nothing when not.
Uploads stream from disk with a progress bar.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tqdm import tqdm

from podium import cli_challenge
from podium.api_client import Client, CliError, ProgressReader, error_detail
from podium.cli_context import preflight
from podium.cli_text import format_kit, format_leaderboard, format_quota, format_submission
from podium.downloads import DownloadFailed, download

DEFAULT_URL = "http://127.0.0.1:8000"
FINISHED = ("done", "failed", "cancelled")  # a run's terminal states
ENVIRONMENT = (
    "environment: PODIUM_URL (the server, default http://127.0.0.1:8000), PODIUM_TOKEN (your "
    "API token: create it on your account page, /account/, or POST /api/token/)"
)


# Upload and reading times out per network operation, not for the whole transfer.
def _choice(args: argparse.Namespace) -> dict[str, Any]:
    """The team and the tasks and splits chosen, as the API takes them (lists: repeated)."""
    chosen: dict[str, Any] = {"tasks": args.task or [], "splits": args.split or []}
    if args.team:
        chosen["team"] = args.team
    return chosen


def quota(client: Client, args: argparse.Namespace) -> dict[str, Any]:
    """The quota preflight: may the team submit now on the chosen tasks, and each task's use."""
    return client.call("GET", f"challenges/{args.challenge}/quota/", params=_choice(args))


def submit(client: Client, args: argparse.Namespace) -> dict[str, Any]:
    path = None if args.ref else Path(args.archive or args.context)
    if path is not None and not path.is_file():
        raise CliError(f"{path}: no such file")
    if args.context:  # what it declares checked too (its Dockerfile's bases, its models)
        allowed = preflight(client, args.challenge, _choice(args), Path(args.context))
    else:
        allowed = quota(client, args)  # before a byte is uploaded
    if not allowed["allowed"]:
        raise CliError(f"not submitted: {allowed['problem']}")
    data = {
        "challenge": args.challenge,
        "method_name": args.method,
        "description": args.description,
        "paper_url": args.paper_url,
        "code_url": args.code_url,
        **_choice(args),
    }
    if path is None:
        data.update(artifact_kind="registry-ref", registry_ref=args.ref)
        return client.call("POST", "submissions/", data=data)
    data["artifact_kind"] = "image-archive" if args.archive else "build-context"
    size = path.stat().st_size
    if size > allowed["max_artifact_bytes"]:
        raise CliError(
            f"not submitted: {path.name} is {size} bytes; the tasks chosen take at most "
            f"{allowed['max_artifact_bytes']} bytes"
        )
    with (
        path.open("rb") as handle,
        tqdm(total=size, unit="B", unit_scale=True, desc=path.name, disable=args.quiet) as bar,
    ):
        files = {"artifact": (path.name, ProgressReader(handle, bar), "application/x-tar")}
        return client.call("POST", "submissions/", data=data, files=files)


def status(client: Client, args: argparse.Namespace) -> dict[str, Any]:
    return client.call("GET", f"submissions/{args.submission_id}/")


def finished(body: dict[str, Any]) -> bool:
    runs = body.get("runs") or []
    if body.get("state") == "failed":
        return True
    return bool(runs) and all(r["state"] in FINISHED for r in runs)


def wait(client: Client, body: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
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


def leaderboard(client: Client, args: argparse.Namespace) -> dict[str, Any]:
    split_id = client.split_id(args.challenge, args.task, args.split)
    params = {"setting": args.setting} if args.setting else {}
    return client.call("GET", f"splits/{split_id}/leaderboard/", params=params)


def kit(client: Client, args: argparse.Namespace) -> dict[str, Any]:
    """The challenge's starter kit (and with ``--base-image``, a base image archive) into
    ``--output``, each verified against its sha256."""
    slug = args.challenge
    body = client.call("GET", f"challenges/{slug}/kit/")
    wanted: list[tuple[str, str, str, dict[str, str] | None]] = [
        (f"challenges/{slug}/kit/download/", body["filename"], body["sha256"], None)
    ]
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
            detail = f": {error_detail(exc.response)}" if exc.response is not None else ""
            raise CliError(f"{exc}{detail}") from None
        files.append({**got.as_dict(), "fetched": got.fetched})
    return {"challenge": slug, "version": body["version"], "files": files}


def _add_common_options(parser: argparse.ArgumentParser, defaults: bool) -> None:
    """Options every command takes, before or after its name (``--json`` anywhere). A command's
    parser has no defaults for them, so it keeps what was given before the command's name."""

    def default(value: Any) -> Any:
        return value if defaults else argparse.SUPPRESS

    parser.add_argument(
        "--url", default=default(os.environ.get("PODIUM_URL", DEFAULT_URL)), help="the server"
    )
    parser.add_argument(
        "--token", default=default(os.environ.get("PODIUM_TOKEN")), help="your API token"
    )
    parser.add_argument(
        "--json",
        action="store_true",
        default=default(False),
        help="print one JSON document on stdout",
    )
    parser.add_argument(
        "--quiet", action="store_true", default=default(False), help="no progress bar"
    )


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(
        prog="python -m podium.cli", description=__doc__.split("\n")[0], epilog=ENVIRONMENT
    )
    _add_common_options(root, defaults=True)
    commands = root.add_subparsers(dest="command", required=True)

    def command(name: str, help: str) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=help, description=help, epilog=ENVIRONMENT)
        _add_common_options(sub, defaults=False)
        return sub

    sub = command("submit", "submit an agent (asks the quota first; uploads nothing if refused)")
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
    _choice_options(sub)
    _wait_options(sub)
    sub.set_defaults(run=submit, show=format_submission, needs_token=True)

    sub = command("quota", "whether your team may submit now, and each task's quota use")
    sub.add_argument("--challenge", required=True, help="challenge slug")
    sub.add_argument("--team", help="team name (when you are in several)")
    _choice_options(sub)
    sub.set_defaults(run=quota, show=format_quota, needs_token=True)

    sub = command("status", "a submission's state, its runs' progress and scores")
    sub.add_argument("submission_id", type=int)
    _wait_options(sub)
    sub.set_defaults(run=status, show=format_submission, needs_token=True)

    sub = command("leaderboard", "a split's ranked entries")
    sub.add_argument("challenge")
    sub.add_argument("task", help="task id, e.g. multi-turn-qa")
    sub.add_argument("split", help="validation, public-test or private-test")
    sub.add_argument(
        "--setting", help="the task's setting to rank (e.g. gt_clue; default: its first)"
    )
    sub.set_defaults(run=leaderboard, show=format_leaderboard, needs_token=False)

    sub = command("kit", "download a challenge's starter kit, sha256-checked")
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
    cli_challenge.add_command(command)
    return root


def _choice_options(sub: argparse.ArgumentParser) -> None:
    sub.add_argument(
        "--task",
        action="append",
        metavar="TASK",
        help="a task to evaluate on (repeat for several; default: every task)",
    )
    sub.add_argument(
        "--split",
        action="append",
        metavar="TASK/SPLIT",
        help="only this split of a task whose organisers let teams choose (repeat)",
    )


def _wait_options(sub: argparse.ArgumentParser) -> None:
    sub.add_argument(
        "--wait", action="store_true", help="follow the runs until they finish; exit 1 if any fails"
    )
    sub.add_argument("--every", type=float, default=5.0, help="seconds between polls (--wait)")
    sub.add_argument("--timeout", type=float, default=0, help="give up after so many seconds")


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.needs_token and not args.token:
        return _fail(args, "give --token or set PODIUM_TOKEN", code=2)
    try:
        client = Client(args.url, args.token)
        body = args.run(client, args)
        if getattr(args, "wait", False):
            body = wait(client, body, args)
    except CliError as exc:
        return _fail(args, str(exc))
    print(json.dumps(body, indent=2) if args.json else args.show(body))
    if getattr(args, "wait", False) and not all(r["state"] == "done" for r in body["runs"]):
        return 1
    if args.run is quota and not body["allowed"]:
        return 1
    return 0


def _fail(args: argparse.Namespace, message: str, code: int = 1) -> int:
    """The error on stderr; with ``--json``, also as the one JSON document on stdout."""
    print(f"error: {message}", file=sys.stderr)
    if args.json:
        print(json.dumps({"error": message}))
    return code


if __name__ == "__main__":
    sys.exit(main())
