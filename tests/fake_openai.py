"""A real HTTP server speaking the OpenAI chat-completions API, scriptable for tests.

It stands in for an LLM (which cannot run here): ``POST /v1/chat/completions`` and
``GET /v1/models`` on 127.0.0.1 and a random port. Script it through attributes:

- ``reply``: the default reply text; ``replies[substring] = text`` for requests whose user
  message contains ``substring`` (e.g. a question); ``GARBAGE`` answers a non-JSON body,
  ``NO_CHOICES`` a JSON body without choices;
- ``fail(status, times)``: the next ``times`` requests get ``status`` (with ``Retry-After-Ms``
  so the client retries quickly); ``recover()`` drops those not used yet;
- ``hang_s``: every request sleeps this long first (to trip time-outs);
- ``latency_s``: every request sleeps this long (for benchmarks);
- ``reject_response_format``: answer 400 to requests carrying ``response_format``;
- ``respond``: a function of the request's payload giving the reply text (before the rest).

Structured output is echoed: with ``response_format`` (json_schema) the reply comes as
``{"verdict": reply}``; with vLLM's ``structured_outputs.choice`` or ``guided_choice`` it comes
as the bare reply. ``requests`` records every payload received and ``count`` counts them.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# A task's fields for being judged by this server, named "fake" in the worker's
# PODIUM_JUDGE_ENDPOINTS (``endpoints_setting``).
FAKE_JUDGE = {"judge_kind": "openai", "judge_model": "fake-judge", "judge_endpoint": "fake"}
GARBAGE = "<<garbage>>"  # a reply body that is not JSON
NO_CHOICES = "<<no choices>>"  # a JSON reply without choices


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # as real servers do; else delayed ACKs add 40 ms a reply
    wbufsize = -1  # headers and body leave in one write
    server: _Server

    def setup(self) -> None:  # one call per connection
        super().setup()
        fake = self.server.fake
        with fake._lock:
            fake.connections += 1

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def _send(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (a time-out test)

    def do_GET(self) -> None:
        if self.path.rstrip("/").endswith("/models"):
            body = {"object": "list", "data": [{"id": "fake-judge", "object": "model"}]}
            self._send(200, json.dumps(body).encode())
        else:
            self._send(404, b'{"error": {"message": "not found"}}')

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", 0))
        try:
            payload = json.loads(self.rfile.read(length) or b"{}")
        except ValueError:
            self._send(400, b'{"error": {"message": "the request body is not JSON"}}')
            return
        fake = self.server.fake
        fake.authorizations.append(self.headers.get("Authorization", ""))
        status, text = fake.handle(payload)
        if fake.latency_s or fake.hang_s:
            time.sleep(fake.latency_s + fake.hang_s)
        fake.finished()
        if status != 200:
            error = {"error": {"message": text, "type": "fake_error", "code": status}}
            self._send(status, json.dumps(error).encode(), fake.retry_after)
        elif text == GARBAGE:
            self._send(200, b"this is not json {")
        elif text == NO_CHOICES:
            self._send(200, b'{"object": "chat.completion", "choices": []}')
        else:
            self._send(200, json.dumps(_completion(payload, text)).encode())


def _completion(payload: dict[str, Any], text: str) -> dict[str, Any]:
    content = json.dumps({"verdict": text}) if "response_format" in payload else text
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": payload.get("model", "fake-judge"),
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256
    fake: FakeOpenAI


class FakeOpenAI:
    def __init__(self, reply: str = "CORRECT", latency_s: float = 0.0, port: int = 0) -> None:
        self.reply = reply
        self.replies: dict[str, str] = {}
        self.latency_s = latency_s
        self.hang_s = 0.0
        self.retry_after = {"Retry-After-Ms": "10"}  # sent with every scripted failure
        self.connections = 0  # TCP connections accepted
        self.reject_response_format = False
        self.respond: Callable[[dict[str, Any]], str] | None = None
        self.requests: list[dict[str, Any]] = []
        self.authorizations: list[str] = []  # the Authorization header of each request
        self.keep_payloads = True
        self.received = 0
        self.in_flight = 0
        self.peak_in_flight = 0  # the most requests it worked on at once
        self._failures: list[int] = []
        self._lock = threading.Lock()
        self._server = _Server(("127.0.0.1", port), _Handler)
        self._server.fake = self
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    @property
    def count(self) -> int:
        return self.received

    def fail(self, status: int, times: int = 1) -> None:
        with self._lock:
            self._failures.extend([status] * times)

    def recover(self) -> None:
        """Drop the scripted failures not used yet: the endpoint is back."""
        with self._lock:
            self._failures.clear()

    def handle(self, payload: dict[str, Any]) -> tuple[int, str]:
        """The status and reply text for one request (records the payload)."""
        with self._lock:
            self.received += 1
            self.in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
            if self.keep_payloads:
                self.requests.append(payload)
            if self._failures:
                return self._failures.pop(0), "scripted failure"
        if self.reject_response_format and "response_format" in payload:
            return 400, "response_format is not supported by this server"
        if self.respond is not None:
            return 200, self.respond(payload)
        user = next((m["content"] for m in payload.get("messages", []) if m["role"] == "user"), "")
        for needle, text in self.replies.items():
            if needle in user:
                return 200, text
        return 200, self.reply

    def finished(self) -> None:
        with self._lock:
            self.in_flight -= 1

    def start(self) -> FakeOpenAI:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def endpoints_setting(base_url: str) -> str:
    """PODIUM_JUDGE_ENDPOINTS naming a server of this kind at ``base_url`` (``.../v1``)."""
    return json.dumps({"fake": {"base_url": base_url, "model": FAKE_JUDGE["judge_model"]}})


def serve(latency_s: float, ready: Any) -> None:
    """Run a server until killed, sending its URL through ``ready`` (a multiprocessing pipe)."""
    fake = FakeOpenAI(latency_s=latency_s)
    fake.keep_payloads = False  # a benchmark's payloads are not kept
    ready.send(fake.url)
    fake._server.serve_forever()
