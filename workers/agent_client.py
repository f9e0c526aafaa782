"""The runner's side of the agent protocol: HTTP/1.1 + JSON over the agent's Unix socket.

The socket lives in a directory the (untrusted) agent can write to, so it is opened without
following links: ``O_PATH | O_NOFOLLOW``, checked to be a socket, then connected through
``/proc/self/fd`` (which also keeps the path short). Every call has a hard deadline: each
blocking send or receive on the socket may only wait for what is left of it, so neither a
silent agent nor one that drips bytes can hold the runner past it (and no thread is needed to
enforce it). Response bodies are size-capped before parsing. A request goes out in one write,
head and body together, so that the agent's server wakes once and finds all of it.
"""

from __future__ import annotations

import http.client
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

from agentkit.adapters import KIT_A, KIT_B, KIT_ITEMS
from agentkit.protocol import BATCH_PATH, READY_PATH, clip_batch_size
from workers.outcomes import AGENT_TEXT_CHARS

MAX_BODY_BYTES = 64 * 1024 * 1024
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


def _agent_text(exc: Exception) -> str:
    """What an exception quotes of the agent's bytes (http.client caps a line at 64 KiB)."""
    return str(exc)[:AGENT_TEXT_CHARS]


class _DeadlineSocket(socket.socket):
    """A Unix socket whose every blocking send and receive ends by ``deadline``
    (a ``time.monotonic()``), raising ``TimeoutError``: http.client reads and writes through
    ``recv_into`` and ``sendall`` only."""

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


class _UnixConnection(http.client.HTTPConnection):
    sock: _DeadlineSocket | None

    def __init__(self, socket_path: Path) -> None:
        super().__init__("agent")
        self.socket_path = socket_path
        self.deadline = math.inf

    def connect(self) -> None:
        try:
            fd = os.open(self.socket_path, os.O_PATH | os.O_NOFOLLOW)
        except FileNotFoundError:
            raise AgentUnavailable("the agent socket does not exist yet") from None
        try:
            if not stat.S_ISSOCK(os.fstat(fd).st_mode):
                raise ProtocolError("agent.sock is not a socket")
            sock = _DeadlineSocket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.deadline = self.deadline
            try:
                sock._wait_at_most_what_is_left()
                sock.connect(f"/proc/self/fd/{fd}")
            except OSError:
                sock.close()
                raise
            self.sock = sock
        finally:
            os.close(fd)

    # http.client's own (undeclared in its stubs; tests/workers/test_agent_client.py checks it)
    def _send_output(self, message_body: Any = None, encode_chunked: bool = False) -> None:
        """The head and a ``bytes`` body in one write: http.client writes them apart, so the
        agent's server could wake to the head alone and wait again for the body."""
        if not isinstance(message_body, bytes) or encode_chunked:
            super()._send_output(message_body, encode_chunked)  # type: ignore[misc]
            return
        buffer: list[bytes] = self._buffer  # type: ignore[attr-defined]
        buffer.extend((b"", b""))
        head = b"\r\n".join(buffer)
        del buffer[:]
        self.send(head + message_body)


class AgentClient:
    """One keep-alive connection to an agent; reconnects after errors and time-outs."""

    def __init__(self, socket_path: str | Path, max_body_bytes: int = MAX_BODY_BYTES) -> None:
        self.socket_path = Path(socket_path)
        self.max_body_bytes = max_body_bytes
        self._conn: _UnixConnection | None = None

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

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
        if self._conn is None:
            self._conn = _UnixConnection(self.socket_path)
        conn = self._conn
        started = time.monotonic()
        conn.deadline = started + timeout_s
        if conn.sock is not None:
            conn.sock.deadline = conn.deadline
        headers = {"Content-Type": "application/json"} if body is not None else {}
        try:
            conn.request(method, path, body=body, headers=headers)
            if sent is not None:
                sent()
            response = conn.getresponse()
            raw = response.read(self.max_body_bytes + 1)
            if len(raw) > self.max_body_bytes:
                limit = self.max_body_bytes
                raise ProtocolError(f"{path}: response body larger than {limit} bytes")
            if response.length:  # the body stopped short of its Content-Length
                raise http.client.IncompleteRead(raw, response.length)
            if response.will_close:
                self.close()
        except (ProtocolError, AgentUnavailable):
            self.close()
            raise
        except (TimeoutError, OSError, http.client.HTTPException, ValueError) as exc:
            self.close()
            if isinstance(exc, TimeoutError) or time.monotonic() - started >= timeout_s:
                raise AgentTimeout(f"{method} {path}: no answer within {timeout_s:.1f} s") from None
            hung_up = (http.client.RemoteDisconnected, http.client.IncompleteRead)
            if isinstance(exc, http.client.HTTPException | ValueError) and not isinstance(
                exc, hung_up
            ):  # the exception's text quotes the agent's bytes: kept apart from the reason
                raise ProtocolError(
                    f"{path}: malformed HTTP response ({exc.__class__.__name__})",
                    agent_text=_agent_text(exc),
                ) from None
            raise AgentUnavailable(f"{method} {path}: {exc.__class__.__name__}") from None
        try:
            parsed = json.loads(raw.decode("utf-8", errors="replace")) if raw else None
        except ValueError:
            raise ProtocolError(
                f"{path}: HTTP {response.status} body is not JSON",
                agent_text=raw[:AGENT_TEXT_CHARS].decode("utf-8", errors="replace"),
            ) from None
        return AgentReply(status=response.status, body=parsed)
