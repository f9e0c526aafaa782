"""The search service an agent container reaches through ``search.sock`` (no network).

HTTP/1.1 with JSON bodies over a Unix socket (``agentkit/protocol.py``), keep-alive allowed.
Bounded per run, whatever the agent does: at most ``MAX_CONNECTIONS`` connections at once (one
thread each; one more is answered 503 and closed at once, no thread made), searches worked on
by a pool of ``MAX_SEARCHES_AT_ONCE`` threads (the others wait their turn),
bodies up to ``MAX_BODY_BYTES``, images up to ``queries.MAX_IMAGE_PIXELS`` (checked before
decoding).

- ``POST /search/image`` ``{"image_b64": str, "k": int}`` (or ``"image_url"``: a URL of one of
  the corpus' images) -> 200 ``{"results": [...]}``
- ``POST /search/web`` ``{"query": str, "k": int}`` -> 200 ``{"results": [...]}``
- ``POST /search/candidates`` ``{"item_id": str, "query": str | "image_b64": str, "k": int}``
  -> 200 ``{"results": [{"id", "score"}]}``: the item's candidates only, and only for an item
  of the batch being answered (``workers.search.candidates``)

Errors are ``{"error": str}``: 400 bad request (the message says which field), 403 web search
in a task that does not enable it (the message is the official API's ``ValueError`` text, so
agentkit raises the same exception), 404 unknown path, 405 not POST, 411 no Content-Length,
413 body over ``MAX_BODY_BYTES``, 404 also an item that is not in the batch or has no candidates,
429 more searches than the runner allowed for the batch being
answered (``SearchService.allow``), 503 too many connections at once, 500 an unexpected server
fault (logged here, not shown).

The socket file is made mode 0666 so the container's non-root user (uid 10001) can connect;
the directory holding it must be searchable by that user too (the runner creates it).
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
import logging
import os
import socketserver
import stat
import threading
from concurrent.futures import ThreadPoolExecutor
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

from PIL import Image

from agentkit.protocol import CANDIDATE_SEARCH_PATH, IMAGE_SEARCH_PATH, WEB_SEARCH_PATH
from workers.search.engine import SearchEngine
from workers.search.queries import BadQuery, SearchRefused, decode_image, web_search_enabled

log = logging.getLogger(__name__)

MAX_BODY_BYTES = 8 * 1024 * 1024  # a base64 960x1280 photo is well under 1 MB
IDLE_TIMEOUT_S = 60.0
MAX_CONNECTIONS = 8  # per run, at once
# Per run: searches are worked on by this many threads, whatever the number of connections, so
# decoding and encoding images holds memory in these threads' heaps only.
MAX_SEARCHES_AT_ONCE = 2
_TOO_MANY = json.dumps(
    {"error": f"too many connections to the search service: at most {MAX_CONNECTIONS} at once"}
).encode()


class _RequestError(Exception):
    def __init__(self, status: HTTPStatus, message: str) -> None:
        super().__init__(message)
        self.status = status


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "PodiumSearch/1"
    timeout = IDLE_TIMEOUT_S
    server: _Server

    def do_POST(self) -> None:
        try:
            body = self._body()
            search = {
                IMAGE_SEARCH_PATH: self._image_search,
                WEB_SEARCH_PATH: self._web_search,
                CANDIDATE_SEARCH_PATH: self._candidate_search,
            }.get(self.path)
            if search is None:
                raise _RequestError(HTTPStatus.NOT_FOUND, f"no such path {self.path!r}")
            if not self.server.take_search():
                raise _RequestError(
                    HTTPStatus.TOO_MANY_REQUESTS,
                    f"more than the {self.server.allowed} searches allowed for this batch",
                )
            results = self.server.searchers.submit(search, body).result()
        except _RequestError as exc:
            self._reply(exc.status, {"error": str(exc)})
        except SearchRefused as exc:
            self._reply(HTTPStatus.FORBIDDEN, {"error": str(exc)})
        except BadQuery as exc:
            self._reply(HTTPStatus.BAD_REQUEST, {"error": str(exc)})
        except Exception:
            log.exception("search service: %s failed", self.path)
            self._reply(HTTPStatus.INTERNAL_SERVER_ERROR, {"error": "search failed"})
        else:
            self._reply(HTTPStatus.OK, {"results": results})

    def _refuse_method(self) -> None:
        self.close_connection = True  # a body, if any, was not read
        self._reply(HTTPStatus.METHOD_NOT_ALLOWED, {"error": "use POST"})

    do_GET = do_PUT = do_DELETE = do_PATCH = do_HEAD = _refuse_method

    def _body(self) -> dict[str, Any]:
        length_header = self.headers.get("Content-Length")
        if length_header is None:
            self.close_connection = True
            raise _RequestError(HTTPStatus.LENGTH_REQUIRED, "Content-Length header required")
        try:
            length = int(length_header)
        except ValueError:
            length = -1
        if length < 0:
            self.close_connection = True
            raise _RequestError(HTTPStatus.BAD_REQUEST, "Content-Length must be a whole number")
        if length > MAX_BODY_BYTES:
            self.close_connection = True  # the unread body would be parsed as the next request
            raise _RequestError(
                HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                f"body of {length} bytes is over the {MAX_BODY_BYTES}-byte limit",
            )
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise _RequestError(HTTPStatus.BAD_REQUEST, f"body is not JSON: {exc}") from exc
        if not isinstance(body, dict):
            raise _RequestError(HTTPStatus.BAD_REQUEST, "body must be a JSON object")
        return body

    def _image_search(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        engine, url = self.server.engine, body.get("image_url")
        if url is not None:
            if "image_b64" in body or not isinstance(url, str):
                raise BadQuery("give one of 'image_b64' and 'image_url' (a string)")
            return engine.image_search(engine.corpus_image(url), body.get("k", 5))
        return engine.image_search(_image(body), body.get("k", 5))

    def _candidate_search(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        item = body.get("item_id")
        candidates = self.server.candidates.get(item) if isinstance(item, str) else None
        if not candidates:
            raise _RequestError(
                HTTPStatus.NOT_FOUND,
                f"item {item!r} is not in the batch being answered, or has no candidates",
            )
        if ("query" in body) == ("image_b64" in body):
            raise BadQuery("give one of 'query' (text) and 'image_b64' (an example image)")
        query = _image(body) if "image_b64" in body else body["query"]
        if (isinstance(query, str) and query.strip()) or isinstance(query, Image.Image):
            return self.server.engine.candidates.rank(candidates, query, body.get("k", 10))
        raise BadQuery("field 'query' must be a non-empty string")

    def _web_search(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        engine = self.server.engine
        query = body.get("query")  # not a string: refused by the engine like an empty one
        text = query if isinstance(query, str) else ""
        return engine.web_search(text, body.get("k", 5), task=self.server.task)

    def _reply(self, status: HTTPStatus, payload: dict[str, Any]) -> None:
        data = json.dumps(payload, ensure_ascii=False).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def address_string(self) -> str:
        return "search.sock"  # Unix-socket peers have no address

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("search service: " + format, *args)


def _image(body: dict[str, Any]) -> Image.Image:
    encoded = body.get("image_b64")
    if not isinstance(encoded, str) or not encoded:
        raise BadQuery("field 'image_b64' must be a non-empty base64 string")
    try:
        data = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise BadQuery(f"field 'image_b64' is not valid base64: {exc}") from exc
    return decode_image(data)


class _Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True
    block_on_close = False
    request_queue_size = 64  # connections waiting to be accepted (then counted, or refused)

    def __init__(self, socket_path: Path, engine: SearchEngine, task: str) -> None:
        if engine.corpus is not None:
            web_search_enabled(task)  # rejects an unknown task id before binding
        self.engine = engine
        self.task = task
        self.connections = threading.BoundedSemaphore(MAX_CONNECTIONS)
        self.searchers = ThreadPoolExecutor(MAX_SEARCHES_AT_ONCE, thread_name_prefix="search")
        self.allowed: int | None = None  # searches the current batch may still make; None: any
        self.left = 0
        self.candidates: dict[str, list[tuple[str, str]]] = {}  # the batch's items' candidates
        self._budget_lock = threading.Lock()
        super().__init__(str(socket_path), _Handler)

    def allow(
        self, searches: int | None, candidates: dict[str, list[tuple[str, str]]] | None = None
    ) -> None:
        with self._budget_lock:
            self.allowed, self.left = searches, searches or 0
            self.candidates = candidates or {}

    def take_search(self) -> bool:
        with self._budget_lock:
            if self.allowed is None:
                return True
            if self.left <= 0:
                return False
            self.left -= 1
            return True

    def server_close(self) -> None:
        super().server_close()
        self.searchers.shutdown(wait=False, cancel_futures=True)

    def process_request(self, request: Any, client_address: Any) -> None:
        """A thread for the connection while under ``MAX_CONNECTIONS``; else 503 at once."""
        if not self.connections.acquire(blocking=False):
            with contextlib.suppress(OSError):
                request.settimeout(1)
                request.sendall(
                    b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
                    + f"Content-Length: {len(_TOO_MANY)}\r\nConnection: close\r\n\r\n".encode()
                    + _TOO_MANY
                )
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self.connections.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.connections.release()


class SearchService:
    """A running search service; ``close()`` stops it and removes the socket file."""

    def __init__(self, engine: SearchEngine, socket_path: Path, task: str) -> None:
        self.socket_path = socket_path
        self.task = task
        _remove_stale_socket(socket_path)
        self._server = _Server(socket_path, engine, task)
        os.chmod(socket_path, 0o666)
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.2},
            name=f"search-service:{socket_path.name}",
            daemon=True,
        )
        self._thread.start()

    def allow(
        self, searches: int | None, candidates: dict[str, list[tuple[str, str]]] | None = None
    ) -> None:
        """From now on (a new batch), at most ``searches`` requests (None: no limit), and only
        ``candidates`` (item id -> ``(image id, file)``) to search among."""
        self._server.allow(searches, candidates)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()
        self.socket_path.unlink(missing_ok=True)

    def __enter__(self) -> SearchService:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _remove_stale_socket(path: Path) -> None:
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(mode):
        raise FileExistsError(f"{path} exists and is not a socket; refusing to replace it")
    path.unlink()


def start_search_service(engine: SearchEngine, socket_path: Path | str, task: str) -> SearchService:
    """Serve ``engine`` for ``task`` on ``socket_path`` in background threads."""
    return SearchService(engine, Path(socket_path), task)
