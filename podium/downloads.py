"""Downloads for ``python -m podium.cli kit``: a streamed GET into a file, with a progress bar,
checked against the sha256 the server sends (``X-Content-SHA256``) and the one it listed.

Needs only httpx and tqdm (the starter kit carries this module beside ``cli.py``). The file is
written as ``<name>.part`` and renamed once its sha256 matches; a file already there with the
listed sha256 is not downloaded again.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from tqdm import tqdm

SHA256_HEADER = "X-Content-SHA256"
_CHUNK = 1024 * 1024


class DownloadFailed(Exception):
    """The server refused (``response`` holds its answer, read) or the bytes are wrong."""

    def __init__(self, message: str, response: httpx.Response | None = None) -> None:
        super().__init__(message)
        self.response = response


@dataclass(frozen=True)
class Downloaded:
    path: Path
    sha256: str
    size: int
    fetched: bool  # False: the file was already there with this sha256

    def as_dict(self) -> dict[str, Any]:
        return {"path": str(self.path), "sha256": self.sha256, "size": self.size}


def file_sha256(path: Path) -> str:
    """The sha256 of the file at ``path``, hex."""
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def download(
    http: httpx.Client,
    url: str,
    target: Path,
    *,
    listed_sha256: str | None = None,
    params: dict[str, str] | None = None,
    quiet: bool = False,
) -> Downloaded:
    """GET ``url`` into ``target``, verified; ``DownloadFailed`` says what went wrong."""
    if listed_sha256 and target.is_file() and file_sha256(target) == listed_sha256:
        return Downloaded(target, listed_sha256, target.stat().st_size, fetched=False)
    part = target.with_name(target.name + ".part")
    digest, size = hashlib.sha256(), 0
    try:
        with http.stream("GET", url, params=params) as response:
            if response.is_error:
                response.read()
                raise DownloadFailed(
                    f"{target.name}: {response.status_code} {response.reason_phrase}", response
                )
            sent = response.headers.get(SHA256_HEADER)
            total = int(response.headers.get("Content-Length") or 0) or None
            with (
                part.open("wb") as out,
                tqdm(
                    total=total, unit="B", unit_scale=True, desc=target.name, disable=quiet
                ) as bar,
            ):
                for chunk in response.iter_bytes(_CHUNK):
                    out.write(chunk)
                    digest.update(chunk)
                    size += len(chunk)
                    bar.update(len(chunk))
    except httpx.HTTPError as exc:
        part.unlink(missing_ok=True)
        raise DownloadFailed(f"{target.name}: the download stopped ({exc})") from None
    except BaseException:
        part.unlink(missing_ok=True)
        raise
    sha256 = digest.hexdigest()
    for expected, source in ((sent, "the server sent"), (listed_sha256, "the server listed")):
        if expected and expected != sha256:
            part.unlink(missing_ok=True)
            raise DownloadFailed(
                f"{target.name}: sha256 {sha256} differs from the {expected} {source}; "
                "nothing was kept, download it again"
            )
    if not sent:
        part.unlink(missing_ok=True)
        raise DownloadFailed(f"{target.name}: the server sent no sha256 to check it against")
    part.replace(target)
    return Downloaded(target, sha256, size, fetched=True)
