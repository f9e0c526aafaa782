"""Podium's agent protocol served over a Unix socket: ``GET /ready`` and ``POST /batch``.

The server listens at once; the agent loads on the main thread meanwhile (``/ready`` answers
503 until it is loaded, 500 with the error if loading failed). Every request is answered with
JSON, whatever it holds: bad requests get 400 with a message naming what was wrong. Each reply
goes out in one write; a batch's reply is written by the main thread (``AgentHost``), which
then serves that connection's next requests itself until another connection needs it.
"""

from __future__ import annotations

import contextlib
import email.utils
import functools
import http.client
import io
import json
import os
import socketserver
import stat
import sys
import threading
import time
import traceback
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler
from typing import Any, cast

from agentkit import __version__
from agentkit.adapters import AgentProtocolError
from agentkit.batch import BatchRequest, parse_batch
from agentkit.host import AgentHost, Busy, NotReady, Outcome
from agentkit.image_open import BadRequest
from agentkit.protocol import AGENT_SOCKET, BATCH_PATH, READY_PATH, SEARCH_SOCKET

MAX_BODY_BYTES = 256 * 1024 * 1024  # 16 turns of large base64 images fit easily
AGENT_SOCKET_NAME = os.path.basename(AGENT_SOCKET)
MAX_HEADERS = 100  # as http.client's
PHRASES = {status.value: status.phrase for status in HTTPStatus}
VERSIONS = (b"HTTP/1.1", b"HTTP/1.0")


class AgentServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True

    def __init__(self, socket_path: str, host: AgentHost) -> None:
        self.host = host
        _remove_stale_socket(socket_path)
        super().__init__(socket_path, _Handler)
        os.chmod(socket_path, 0o666)  # the runner may run as another user; the directory guards it


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = f"agentkit/{__version__}"
    server: AgentServer
    raw_requestline: bytes  # set by handle_one_request (undeclared in the stubs)

    def do_GET(self) -> None:
        self._guarded(self._get)

    def do_POST(self) -> None:
        self._guarded(self._post)

    def _get(self) -> None:
        if self.path != READY_PATH:
            self._reply(404, {"error": f"no such path {self.path!r}; GET {READY_PATH}"})
            return
        status, body = self.server.host.readiness()
        self._reply(status, body)

    def _post(self) -> None:
        if self.path != BATCH_PATH:
            self._reply(404, {"error": f"no such path {self.path!r}; POST {BATCH_PATH}"})
            return
        received = time.monotonic()
        try:
            batch = parse_batch(self._read_body())
        except BadRequest as exc:
            self._reply(400, {"error": str(exc)})
            return
        deadline_at = None if batch.deadline_s is None else received + batch.deadline_s
        respond = functools.partial(self._guarded, self._answer, batch, received)
        host = self.server.host
        here = threading.current_thread() is threading.main_thread()  # handed over already
        try:
            if here:
                host.answer_here(batch, deadline_at, respond)  # answered and released
                return
            done = host.submit(batch, deadline_at, respond, connection=self)
        except (NotReady, Busy) as exc:
            batch.release()  # refused: its files are closed now
            status = exc.status if isinstance(exc, NotReady) else 409
            self._reply(status, {"error": str(exc)})
            return
        # The main thread replies, then serves this connection until it closes or another
        # connection's batch comes: this thread must not read the next request before.
        done.wait()

    # -- the connection, as the main thread serves it (agentkit.host.Connection) --

    @property
    def closed(self) -> bool:
        return self.close_connection

    def fileno(self) -> int:
        descriptor: int = self.connection.fileno()
        return descriptor

    def pending(self) -> bool:
        """Whether the next request's bytes are already buffered (read without waiting)."""
        timeout = self.connection.gettimeout()
        self.connection.setblocking(False)
        try:
            return bool(cast(io.BufferedReader, self.rfile).peek(1))
        except OSError:
            return False
        finally:
            self.connection.settimeout(timeout)

    def serve_one(self) -> None:
        try:
            self.handle_one_request()
        except OSError:  # the client went away mid-request
            self.close_connection = True

    def _answer(self, batch: BatchRequest, received: float, outcome: Outcome) -> None:
        """Reply to ``batch`` with the agent's ``outcome`` (on the main thread)."""
        if isinstance(outcome, AgentProtocolError):
            self._reply(500, {"error": f"protocol error: {outcome}"})
        elif isinstance(outcome, Exception):
            trace = "".join(traceback.format_exception(outcome))
            print(f"agentkit: batch {batch.batch_id!r} failed:\n{trace}", file=sys.stderr)
            error = f"the agent raised {type(outcome).__name__}: {outcome}"
            self._reply(500, {"error": error, "traceback": trace})
        else:
            elapsed = round(time.monotonic() - received, 6)
            self._reply(
                200, {"batch_id": batch.batch_id, "responses": outcome, "elapsed_s": elapsed}
            )

    def _read_body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            self.close_connection = True
            raise BadRequest("chunked bodies are not supported: send Content-Length")
        length_header = self.headers.get("Content-Length")
        if length_header is None:
            self.close_connection = True
            raise BadRequest("Content-Length header required")
        try:
            length = int(length_header)
        except ValueError:
            self.close_connection = True
            raise BadRequest(f"Content-Length is not a whole number: {length_header!r}") from None
        if length < 0 or length > MAX_BODY_BYTES:
            self.close_connection = True
            raise BadRequest(f"Content-Length {length} outside 0..{MAX_BODY_BYTES} bytes")
        body = self.rfile.read(length)
        if len(body) != length:
            self.close_connection = True
            raise BadRequest(f"body ended after {len(body)} of {length} bytes")
        return body

    def _guarded(self, handle: Any, *args: Any) -> None:
        """Answer 500 rather than drop the connection if agentkit itself fails."""
        try:
            handle(*args)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        except Exception as exc:
            traceback.print_exc()
            self.close_connection = True
            with contextlib.suppress(OSError):
                self._reply(500, {"error": f"agentkit failed: {type(exc).__name__}: {exc}"})

    def _reply(self, status: int, body: dict[str, Any]) -> None:
        """Status line, headers and body in one write: the reader wakes up once."""
        data = json.dumps(body).encode()
        if status >= 400:
            self.log_request(status, len(data))
        close = "Connection: close\r\n" if self.close_connection else ""
        head = (
            f"{self.protocol_version} {status} {PHRASES[status]}\r\nServer: {self.server_version}"
            f"\r\nDate: {_http_date()}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(data)}\r\n{close}\r\n"
        )
        self.wfile.write(head.encode("latin-1") + data)

    def parse_request(self) -> bool:
        """A plain request whose head is read in already (the runner's, in one write) is parsed
        here, as ``BaseHTTPRequestHandler.parse_request`` would (its header parse, the email
        package's, costs 0.1 ms a batch); anything else is left to it."""
        words = self.raw_requestline.split()
        rfile = cast(io.BufferedReader, self.rfile)
        plain = _plain_head(rfile.peek()) if len(words) == 3 and words[2] in VERSIONS else None
        if plain is None:
            return super().parse_request()  # its own checks and errors
        length, fields = plain
        rfile.read(length)
        command, path, version = (word.decode("latin-1") for word in words)
        self.command, self.request_version = command, version
        self.path = "/" + path.lstrip("/") if path.startswith("//") else path
        self.requestline = str(self.raw_requestline, "latin-1").rstrip("\r\n")
        self.headers = headers = http.client.HTTPMessage()
        for name, value in fields:
            headers[name.decode("latin-1")] = value.strip().decode("latin-1")
        connection = headers.get("Connection", "").lower()
        self.close_connection = connection != "keep-alive" and (
            version == "HTTP/1.0" or connection == "close"
        )
        if headers.get("Expect", "").lower() == "100-continue" and version == "HTTP/1.1":
            return self.handle_expect_100()
        return True

    def address_string(self) -> str:
        return AGENT_SOCKET_NAME

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        if isinstance(code, int) and code >= 400:
            super().log_request(code, size)


def _plain_head(buffered: bytes) -> tuple[int, list[list[bytes]]] | None:
    """(its length, its ``name: value`` fields) of a request's headers read in whole, each
    field plain (a name, a colon, no folding), at most ``MAX_HEADERS``; else None."""
    if buffered[:2] == b"\r\n":
        return 2, []
    end = buffered.find(b"\r\n\r\n")
    lines = buffered[:end].split(b"\r\n") if end > 0 else []
    fields = [line.split(b":", 1) for line in lines]
    if not lines or len(lines) > MAX_HEADERS:
        return None
    if any(len(field) != 2 or not field[0] or field[0] != field[0].strip() for field in fields):
        return None
    return end + 4, fields


_DATE = (0, "")  # the second and its Date header value


def _http_date() -> str:
    """The Date header's value, formatted once a second."""
    global _DATE
    now = int(time.time())
    if _DATE[0] != now:
        _DATE = (now, email.utils.formatdate(now, usegmt=True))
    return _DATE[1]


def _remove_stale_socket(path: str) -> None:
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(mode):
        raise FileExistsError(f"{path} exists and is not a socket")
    os.unlink(path)


def replaced_search_packages() -> list[str]:
    """The ``cragmm_search`` packages an image installs besides Podium's stand-in (the official
    package, pip-installed from a kit's requirements): the stand-in, first on the path, is the
    one imported."""
    try:
        import cragmm_search
    except ImportError:  # outside Podium's images
        return []
    ours = os.path.dirname(os.path.dirname(os.path.abspath(cragmm_search.__file__)))
    found = []
    for entry in dict.fromkeys(os.path.abspath(e) for e in sys.path if e):
        candidate = os.path.join(entry, "cragmm_search")
        if entry != ours and os.path.isdir(candidate):
            found.append(candidate)
    return found


def serve(agent_spec: str | None, socket_dir: str, task: str | None = None) -> None:
    """Listen on ``socket_dir/agent.sock``, load the agent, answer batches until terminated.

    The agent's search client talks to ``socket_dir/search.sock``.
    """
    search_socket = os.path.join(socket_dir, os.path.basename(SEARCH_SOCKET))
    host = AgentHost(agent_spec, task, search_socket)
    socket_path = os.path.join(socket_dir, AGENT_SOCKET_NAME)
    server = AgentServer(socket_path, host)
    thread = threading.Thread(target=server.serve_forever, name="agentkit-http", daemon=True)
    thread.start()
    print(f"agentkit {__version__}: listening on {socket_path}, loading {agent_spec}", flush=True)
    for other in replaced_search_packages():
        print(
            f"agentkit: this image installs its own cragmm_search ({other}); Podium's stand-in "
            "is imported instead: its UnifiedSearchPipeline reaches Podium's search service",
            flush=True,
        )
    try:
        host.load()
        if host.agent is not None:
            agent = host.agent
            print(
                f"agentkit: {agent.spec} loaded in {host.load_s} s "
                f"(kit {agent.kit}, batch size {agent.batch_size})",
                flush=True,
            )
        host.serve_batches()
    finally:
        server.shutdown()
        server.server_close()
        _remove_stale_socket(socket_path)
