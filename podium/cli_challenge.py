"""``python -m podium.cli challenge validate|diff|import BUNDLE`` and ``challenge export SLUG``:
challenges as code for organisers, over the REST API (``docs/challenge-bundle.md``).

A bundle directory is zipped on the fly (``evaluator.zips.write_zip``); a zip is sent as
it is. Problems come back each with its file, line and field, and the command exits 1.
"""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from evaluator.zips import write_zip
from podium.api_client import Client, CliError


def challenge(client: Client, args: argparse.Namespace) -> dict[str, Any]:
    if args.action == "export":
        return _export(client, args.target, Path(args.output or f"{args.target}.zip"))
    path = Path(args.target)
    with tempfile.TemporaryFile() as packed:
        if path.is_dir():
            write_zip(path, packed)
            packed.seek(0)
            return _send(client, args.action, path.name, packed, args.redo_runs)
        if not path.is_file():
            raise CliError(f"{path}: neither a bundle directory nor a zip file")
        with path.open("rb") as handle:
            return _send(client, args.action, path.name, handle, args.redo_runs)


def _send(
    client: Client, action: str, name: str, data: IO[bytes], redo_runs: bool
) -> dict[str, Any]:
    response = client.http.post(
        f"bundles/{action}/",
        files={"bundle": (f"{name}.zip", data, "application/zip")},
        data={"redo_runs": "true" if redo_runs else "false"},
    )
    if response.status_code == 400 and "problems" in response.json():
        problems = response.json()["problems"]
        lines = [
            f"{p['file']}:{p['line']}: {p['field']}: {p['message']}"
            if p["line"]
            else f"{p['file']}: {p['field']}: {p['message']}"
            for p in problems
        ]
        raise CliError(f"{len(problems)} problem(s):\n" + "\n".join(lines))
    if response.is_error:
        raise CliError(f"{response.status_code} {response.reason_phrase}: {response.text[:500]}")
    return {"action": action, **response.json()}


def _export(client: Client, slug: str, out: Path) -> dict[str, Any]:
    with client.http.stream("GET", f"challenges/{slug}/bundle/") as response:
        if response.is_error:
            response.read()
            raise CliError(f"{response.status_code} {response.reason_phrase}: {slug}")
        with out.open("wb") as f:
            for chunk in response.iter_bytes():
                f.write(chunk)
    return {"action": "export", "challenge": slug, "path": str(out), "size": out.stat().st_size}


def format_challenge(body: dict[str, Any]) -> str:
    if body["action"] == "export":
        return f"exported {body['challenge']} to {body['path']} ({body['size']} bytes)"
    lines = [f"{body['challenge']}: " + ("unchanged" if body["unchanged"] else "changes:")]
    lines += [f"  {line}" for line in body["changes"]]
    for text in (body.get("pages") or {}).values():  # each changed page's text diff
        lines += [f"    {line}" for line in text]
    lines += [f"publish checklist: {problem}" for problem in body.get("checklist") or []]
    if body.get("version"):
        lines.append(f"imported as version {body['version']}")
    if queued := body.get("runs_queued"):
        lines.append(f"{queued} run{'s' if queued != 1 else ''} queued on new split versions")
    return "\n".join(lines)


def add_command(command: Callable[[str, str], argparse.ArgumentParser]) -> None:
    sub = command("challenge", "organisers: validate, diff, import or export a challenge bundle")
    sub.add_argument("action", choices=("validate", "diff", "import", "export"))
    sub.add_argument("target", help="a bundle directory or zip; export: the challenge's slug")
    sub.add_argument("--output", help="export: the zip to write (default: <slug>.zip)")
    sub.add_argument(
        "--redo-runs",
        action="store_true",
        help="a split whose data changed under its runs becomes a new version: run the "
        "submissions that had runs on it again on the new version",
    )
    sub.set_defaults(run=challenge, show=format_challenge, needs_token=True)
