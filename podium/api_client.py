"""The REST API as Podium's command line calls it: one client, the server's error messages."""

from __future__ import annotations

from typing import IO, Any

import httpx
from tqdm import tqdm

TIMEOUT = httpx.Timeout(60.0)


class CliError(Exception):
    """Something the user should read; printed without a traceback."""


class ProgressReader:
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

    def call(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        try:
            response = self.http.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise CliError(f"cannot reach {self.http.base_url}: {exc}") from None
        if response.is_error:
            raise CliError(
                f"{response.status_code} {response.reason_phrase}: {error_detail(response)}"
            )
        body: dict[str, Any] = response.json()  # every endpoint answers an object
        return body

    def split_id(self, challenge: str, task: str, kind: str) -> int:
        params = {"challenge": challenge, "task": task}
        found = self.call("GET", "splits/", params=params)["results"]
        match = [s["id"] for s in found if s["kind"] == kind]
        if not match:
            kinds = ", ".join(s["kind"] for s in found) or "none"
            raise CliError(f"{challenge}/{task} has no split {kind!r} (splits: {kinds})")
        return int(match[0])


def error_detail(response: httpx.Response) -> str:
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
