"""The runner's side of the agent protocol: HTTP/1.1 + JSON over the agent's Unix socket.

The socket lives in a directory the (untrusted) agent can write to, so it is opened without
following links: ``O_PATH | O_NOFOLLOW``, checked to be a socket, then connected through
``/proc/self/fd`` (which also keeps the path short). Every call has a hard deadline: each
blocking send or receive on the socket may only wait for what is left of it, so neither a
silent agent nor one that drips bytes can hold the runner past it (and no thread is needed to
enforce it). A request is one fixed head and its body, in one write, so that the agent's server
wakes once and finds all of it. A response is parsed by httptools (llhttp, the parser of
Node.js): its head and body are size-capped as they come, and a malformed one is refused with
Podium's words, the agent's bytes kept apart. Writing the request and reading the response
take the runner about 0.1 ms a batch after a 100 ms wait, against 0.4 ms with ``http.client``
(its email-package header parse above all): time the agent waits on every batch
(``docs/benchmarks.md``, "a batch call in C").
"""

from __future__ import annotations

import json
import math
import os
import socket
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httptools

from agentkit.adapters import KIT_A, KIT_B, KIT_ITEMS
from agentkit.protocol import BATCH_PATH, READY_PATH, clip_batch_size
from workers.outcomes import AGENT_TEXT_CHARS

MAX_BODY_BYTES = 64 * 1024 * 1024
MAX_HEAD_BYTES = 64 * 1024  # a status line and headers
RECEIVE_BYTES = 64 * 1024  # read at a time
_COMPACT_JSON = json.JSONEncoder(separators=(",", ":"))  # json.dumps builds one per call


class AgentUnavailable(Exception):
    """The socket is not there yet, refused the connection, or went away mid-call."""


class AgentTimeout(Exception):
    """The call passed its deadline."""


class ProtocolError(Exception):
    """The agent answered something the protocol does not allow. The message says what, in
    Podium's words only; ``agent_text`` holds the agent's own bytes behind it (a status line,
    a header), which may carry a hidden split's queries and so are never part of the message."""

    def __init__(self, reason: str, agent_text: str = "") -> None:
        super().__init__(reason)
        self.agent_text = agent_text


KITS = (KIT_A, KIT_B, KIT_ITEMS, "native")  # what ``/ready`` may name; anything else: native


@dataclass(frozen=True)
class Readiness:
    ready: bool
    batch_size: int = 1
    kit: str = "native"
    failed_status: int | None = None  # the HTTP status of a /ready saying that loading failed
    error: str = ""  # the agent's own words about that failure (never a reason by themselves)


@dataclass(frozen=True)
class AgentReply:
    status: int  # HTTP status
    body: Any  # parsed JSON


def encode_batch(batch_id: str, deadline_s: float, fields: dict[str, Any]) -> bytes:
    """The JSON body of ``POST /batch``: the id, the deadline and the protocol's ``fields``
    (``turns``, or ``protocol`` and ``items``; images travel as files, by path)."""
    body = {"batch_id": batch_id, "deadline_s": deadline_s, **fields}
    return _COMPACT_JSON.encode(body).encode("ascii")


def batch_responses(body: Any, expected: int, batch_id: str) -> list[Any]:
    """The ``responses`` of a 200 ``/batch`` reply to batch ``batch_id``: exactly ``expected``
    of them (the protocol's plan reads each), in a reply that names that batch. A refusal's
    reason is Podium's words (the batch sent, the count expected: never a value from the
    reply); the reply is its ``agent_text``."""
    named = body.get("batch_id") if isinstance(body, dict) else None
    if named is None:
        raise ProtocolError(
            f"/batch must answer {{'batch_id': ..., 'responses': [...]}} naming the batch sent "
            f"(batch {batch_id}); the reply named no batch",
            agent_text=reply_text(body),
        )
    if isinstance(named, bool) or not isinstance(named, str | int) or str(named) != batch_id:
        raise ProtocolError(
            f"/batch must answer {{'batch_id': ..., 'responses': [...]}} naming the batch sent "
            f"(batch {batch_id}); the reply named another batch: its answers were not filed",
            agent_text=reply_text(named),
        )
    responses = body.get("responses")
    if not isinstance(responses, list) or len(responses) != expected:
        raise ProtocolError(
            f"/batch must answer {{'responses': [...]}} with {expected} responses, one per item",
            agent_text=reply_text(body),
        )
    return responses


def reply_text(value: Any) -> str:
    """A value from the agent's reply, as the agent's text behind a failure: JSON, capped."""
    return json.dumps(value, ensure_ascii=False)[:AGENT_TEXT_CHARS]


class _DeadlineSocket(socket.socket):
    """A Unix socket whose every blocking send and receive ends by ``deadline``
    (a ``time.monotonic()``), raising ``TimeoutError``."""

    deadline = math.inf

    def _wait_at_most_what_is_left(self) -> None:
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("the call's deadline passed")
        self.settimeout(remaining)

    def recv_into(self, buffer: Any, nbytes: int = 0, flags: int = 0) -> int:
        self._wait_at_most_what_is_left()
        return super().recv_into(buffer, nbytes, flags)

    def sendall(self, data: Any, flags: int = 0) -> None:
        self._wait_at_most_what_is_left()
        super().sendall(data, flags)


def _connect(socket_path: Path, deadline: float) -> _DeadlineSocket:
    """A connection to the socket at ``socket_path``, never through a link planted there."""
    try:
        fd = os.open(socket_path, os.O_PATH | os.O_NOFOLLOW)
    except FileNotFoundError:
        raise AgentUnavailable("the agent socket does not exist yet") from None
    try:
        if not stat.S_ISSOCK(os.fstat(fd).st_mode):
            raise ProtocolError("agent.sock is not a socket")
        sock = _DeadlineSocket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.deadline = deadline
        try:
            sock._wait_at_most_what_is_left()
            sock.connect(f"/proc/self/fd/{fd}")
        except OSError:
            sock.close()
            raise
        return sock
    finally:
        os.close(fd)


def _request(method: str, path: str, body: bytes | None) -> bytes:
    """The whole request, head and body, for one write."""
    if body is None:
        return f"{method} {path} HTTP/1.1\r\nHost: agent\r\n\r\n".encode("ascii")
    head = (
        f"{method} {path} HTTP/1.1\r\nHost: agent\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    return head.encode("ascii") + body


class _Response:
    """One response as httptools parses it (its callbacks): the final (non-1xx) response's
    status, body (at most ``max_body_bytes``: beyond, ``too_large``) and keep-alive."""

    def __init__(self, max_body_bytes: int) -> None:
        self.parser = httptools.HttpResponseParser(self)
        self.max_body_bytes = max_body_bytes
        self.body = bytearray()
        self.status = 0
        self.headers_done = False
        self.delimited = False  # by Content-Length or chunks; else by the connection's close
        self.complete = False
        self.keep_alive = False
        self.too_large = False

    def on_header(self, name: bytes, value: bytes) -> None:
        if not self.complete and name.lower() in (b"content-length", b"transfer-encoding"):
            self.delimited = True

    def on_headers_complete(self) -> None:
        self.headers_done = True

    def on_body(self, data: bytes) -> None:
        if self.complete:  # a second response, unasked for: not this call's
            return
        if len(self.body) + len(data) > self.max_body_bytes:
            self.too_large = True
        else:
            self.body += data

    def on_message_complete(self) -> None:
        if self.complete:  # a second response: the connection is not used again
            self.keep_alive = False
            return
        status = self.parser.get_status_code()
        if status < 200:  # interim (100 Continue): the response follows
            self.headers_done = self.delimited = False
            return
        self.status, self.complete = status, True
        self.keep_alive = self.parser.should_keep_alive()

    def closed(self) -> None:
        """The agent closed the connection: the end of a body delimited by it."""
        if self.headers_done and not self.delimited:
            self.status, self.complete = self.parser.get_status_code(), True


def _receive(sock: _DeadlineSocket, path: str, max_body_bytes: int) -> _Response:
    """Read one response from ``sock``. Raises :class:`ProtocolError` (malformed, too large),
    :class:`AgentUnavailable` (closed before its end), ``TimeoutError`` or ``OSError``."""
    response = _Response(max_body_bytes)
    buffer = bytearray(RECEIVE_BYTES)
    view = memoryview(buffer)
    seen = bytearray()  # its first bytes: the agent's text behind a malformed head
    received = 0
    while not response.complete:
        count = sock.recv_into(buffer)
        if count == 0:
            response.closed()
            if response.complete:
                break
            said = "hung up before answering" if received == 0 else "closed mid-response"
            raise AgentUnavailable(f"{path}: the agent {said}")
        received += count
        if len(seen) < AGENT_TEXT_CHARS:
            seen += view[: min(count, AGENT_TEXT_CHARS - len(seen))]
        try:
            response.parser.feed_data(view[:count])
        except httptools.HttpParserError as exc:
            if response.complete:  # bytes after the response: the connection is not reused
                response.keep_alive = False
                break
            raise ProtocolError(
                f"{path}: malformed HTTP response ({exc.__class__.__name__})",
                agent_text=seen.decode("utf-8", errors="replace"),
            ) from None
        if response.too_large:
            raise ProtocolError(f"{path}: response body larger than {max_body_bytes} bytes")
        if not response.headers_done and received > MAX_HEAD_BYTES:
            raise ProtocolError(
                f"{path}: malformed HTTP response (status line and headers over "
                f"{MAX_HEAD_BYTES} bytes)",
                agent_text=seen.decode("utf-8", errors="replace"),
            )
    return response


class AgentClient:
    """One keep-alive connection to an agent; reconnects after errors and time-outs."""

    def __init__(self, socket_path: str | Path, max_body_bytes: int = MAX_BODY_BYTES) -> None:
        self.socket_path = Path(socket_path)
        self.max_body_bytes = max_body_bytes
        self._sock: _DeadlineSocket | None = None

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def ready(self, timeout_s: float = 5.0) -> Readiness:
        """``GET /ready``: not ready (503), ready with the batch size and kit, or load failure."""
        reply = self.call("GET", READY_PATH, None, timeout_s)
        body = reply.body if isinstance(reply.body, dict) else {}
        if reply.status == 503:
            return Readiness(ready=False)
        if reply.status != 200:  # loading failed; what the agent says about it is its own text
            said = body.get("error")
            error = said if isinstance(said, str) else ""
            return Readiness(
                ready=False, failed_status=reply.status, error=error[:AGENT_TEXT_CHARS]
            )
        size = body.get("batch_size")
        if body.get("ready") is not True or isinstance(size, bool) or not isinstance(size, int):
            raise ProtocolError("/ready must answer {'ready': true, 'batch_size': <int>, ...}")
        named = body.get("kit")
        kit = named if isinstance(named, str) and named in KITS else "native"
        return Readiness(ready=True, batch_size=clip_batch_size(size), kit=kit)

    def batch(
        self, body: bytes, timeout_s: float, sent: Callable[[], None] | None = None
    ) -> AgentReply:
        """``POST /batch`` (a body from ``encode_batch``) with a hard deadline of ``timeout_s``;
        ``sent`` is called once the request is written, while the reply is awaited."""
        return self.call("POST", BATCH_PATH, body, timeout_s, sent)

    def call(
        self,
        method: str,
        path: str,
        body: bytes | None,
        timeout_s: float,
        sent: Callable[[], None] | None = None,
    ) -> AgentReply:
        if timeout_s <= 0:
            raise AgentTimeout(f"{method} {path}: no time left")
        started = time.monotonic()
        deadline = started + timeout_s
        try:
            if self._sock is None:
                self._sock = _connect(self.socket_path, deadline)
            sock = self._sock
            sock.deadline = deadline
            sock.sendall(_request(method, path, body))
            if sent is not None:
                sent()
            response = _receive(sock, path, self.max_body_bytes)
            if not response.keep_alive:
                self.close()
        except (ProtocolError, AgentUnavailable):
            self.close()
            raise
        except OSError as exc:  # TimeoutError included
            self.close()
            if isinstance(exc, TimeoutError) or time.monotonic() - started >= timeout_s:
                raise AgentTimeout(f"{method} {path}: no answer within {timeout_s:.1f} s") from None
            raise AgentUnavailable(f"{method} {path}: {exc.__class__.__name__}") from None
        raw = bytes(response.body)
        try:
            parsed = json.loads(raw.decode("utf-8", errors="replace")) if raw else None
        except ValueError:
            raise ProtocolError(
                f"{path}: HTTP {response.status} body is not JSON",
                agent_text=raw[:AGENT_TEXT_CHARS].decode("utf-8", errors="replace"),
            ) from None
        return AgentReply(status=response.status, body=parsed)
