"""What a build context declares, read on the participant's machine before it is uploaded: its
top-level ``Dockerfile`` and manifests (``evaluator.tar_scan.MANIFESTS``: the models it loads),
as the upload check reads them. ``submit`` sends them with the preflight, which checks them as
the upload will (the base images the Dockerfile starts from, the models the challenge provides)
and refuses before a byte of the context is sent.
"""

from __future__ import annotations

import posixpath
import tarfile
import zlib
from pathlib import Path
from typing import IO, Any

from evaluator.tar_scan import DOCKERFILE, MANIFESTS, MAX_DOCKERFILE_BYTES, MAX_MANIFEST_BYTES
from podium.api_client import Client, CliError


def preflight(
    client: Client, challenge: str, chosen: dict[str, Any], context: Path
) -> dict[str, Any]:
    """The quota preflight (``chosen``: team, tasks, splits) with what the build context at
    ``context`` declares, checked as the upload will check it; a refusal is ``CliError``."""
    path = f"challenges/{challenge}/quota/"
    try:
        return client.call("POST", path, json={**chosen, **declarations(context)})
    except CliError as exc:
        raise CliError(f"not submitted: {exc}") from None


def declarations(path: Path) -> dict[str, Any]:
    """``{"filename", "dockerfile", "manifests"}`` of the build context at ``path`` (a tar,
    plain or compressed), read as a stream; ``dockerfile`` None when it is not read here (over
    ``MAX_DOCKERFILE_BYTES``, not UTF-8: the upload's check says why)."""
    manifests: dict[str, str] = {}
    dockerfile: str | None = None
    seen = False
    try:
        with tarfile.open(path, mode="r|*") as archive:
            for member in archive:
                name = posixpath.normpath(member.name)
                if not member.isfile():
                    continue
                if name in MANIFESTS and member.size <= MAX_MANIFEST_BYTES:
                    manifests[name] = _read(archive.extractfile(member)).decode(errors="replace")
                elif name == DOCKERFILE and not seen:
                    seen = True
                    if member.size <= MAX_DOCKERFILE_BYTES:
                        dockerfile = _text(_read(archive.extractfile(member)))
    except (tarfile.TarError, EOFError, OSError, zlib.error) as exc:
        raise CliError(f"{path}: not a readable tar archive ({exc})") from None
    return {"filename": path.name, "dockerfile": dockerfile, "manifests": manifests}


def _read(handle: IO[bytes] | None) -> bytes:
    return handle.read() if handle is not None else b""


def _text(data: bytes) -> str | None:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None
