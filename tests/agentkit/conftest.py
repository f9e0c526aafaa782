"""Run agentkit's server as a real subprocess on the host, with a temporary socket directory."""

from __future__ import annotations

import base64
import http.client
import io
import json
import os
import socket
import socketserver
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

REPO = Path(__file__).resolve().parents[2]


class UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path: Path, timeout: float = 10.0) -> None:
        super().__init__("localhost", timeout=timeout)
        self.path = str(path)

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.path)


def request(
    sock: Path, method: str, path: str, body: Any = None, raw: bytes | None = None
) -> tuple[int, Any]:
    """One HTTP request over a Unix socket; the JSON answer parsed."""
    conn = UnixHTTPConnection(sock)
    try:
        data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
        conn.request(method, path, body=data, headers={"Content-Type": "application/json"})
        response = conn.getresponse()
        return response.status, json.loads(response.read())
    finally:
        conn.close()


def jpeg_bytes(size: tuple[int, int] = (64, 48), color: str = "red") -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size, color).save(buffer, "JPEG")
    return buffer.getvalue()


def turn(query: str = "What is this?", image: bytes | Path | None = None, **fields: Any) -> dict:
    """A TurnRequest; ``image`` as a file (a Path: ``image_path``) or inline (bytes: base64)."""
    if isinstance(image, Path):
        picture = {"image_path": str(image)}
    else:
        picture = {"image_b64": None if image is None else base64.b64encode(image).decode()}
    return {
        "session_id": fields.pop("session_id", "s1"),
        "interaction_id": fields.pop("interaction_id", "i1"),
        "turn_idx": fields.pop("turn_idx", 0),
        "query": query,
        **picture,
        "message_history": fields.pop("message_history", []),
        "rag_context": fields.pop("rag_context", None),
        "domain": fields.pop("domain", None),
        **fields,
    }


def batch(*turns: dict, batch_id: str = "b1", deadline_s: float | None = 10.0) -> dict:
    return {"batch_id": batch_id, "deadline_s": deadline_s, "turns": list(turns)}


@dataclass
class RunningAgent:
    process: subprocess.Popen
    socket_dir: Path
    workdir: Path

    @property
    def socket(self) -> Path:
        return self.socket_dir / "agent.sock"

    def get(self, path: str = "/ready") -> tuple[int, Any]:
        return request(self.socket, "GET", path)

    def post(self, body: Any, path: str = "/batch", raw: bytes | None = None) -> tuple[int, Any]:
        return request(self.socket, "POST", path, body=body, raw=raw)

    def wait_loaded(self, timeout: float = 20.0) -> tuple[int, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            status, body = self.get()
            if status != 503:
                return status, body
            time.sleep(0.02)
        raise AssertionError("the agent did not finish loading")

    def output(self) -> str:
        self.process.terminate()
        out, _ = self.process.communicate(timeout=10)
        return out


def _accepts(path: Path) -> bool:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        try:
            probe.connect(str(path))
        except OSError:
            return False
    return True


@pytest.fixture
def start_agent(tmp_path: Path) -> Iterator:
    """``start_agent(source, spec="agent:Agent", env={})`` runs ``source`` as module ``agent``."""
    processes: list[subprocess.Popen] = []

    def start(
        source: str, spec: str | None = "agent:Agent", env: dict[str, str] | None = None
    ) -> RunningAgent:
        workdir = tmp_path / f"agent{len(processes)}"
        socket_dir = tmp_path / f"sock{len(processes)}"
        workdir.mkdir()
        socket_dir.mkdir()
        (workdir / "agent.py").write_text(textwrap.dedent(source))
        environment = {
            k: v for k, v in os.environ.items() if not k.startswith("PODIUM_") and k != "PYTHONPATH"
        }
        environment.update(
            {"PODIUM_SOCKET_DIR": str(socket_dir), "PYTHONPATH": f"{workdir}{os.pathsep}{REPO}"}
        )
        if spec is not None:
            environment["PODIUM_AGENT"] = spec
        environment.update(env or {})
        process = subprocess.Popen(
            [sys.executable, "-m", "agentkit"],
            cwd=workdir,
            env=environment,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        processes.append(process)
        agent = RunningAgent(process, socket_dir, workdir)
        deadline = time.monotonic() + 20
        while not _accepts(agent.socket):
            if process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"agentkit did not start:\n{agent.output()}")
            time.sleep(0.01)
        return agent

    yield start
    for process in processes:
        if process.poll() is None:
            process.kill()
        process.communicate(timeout=10)


IMAGE_RESULT = {
    "index": 3,
    "score": 0.91,
    "url": "https://example.org/car.jpg",
    "entities": [{"entity_name": "Model T", "entity_attributes": {"brand": "Ford"}}],
}
WEB_RESULT = {
    "index": "https://example.org/t_chunk_0",
    "score": 0.7,
    "page_name": "Model T",
    "page_snippet": "The Model T was built by Ford.",
    "page_url": "https://example.org/t",
}


class StubSearch(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    """Answers like Podium's search service; refuses web search for Task 1 with 403."""

    daemon_threads = True

    def __init__(self, path: Path, task: str) -> None:
        self.task = task
        self.requests: list[tuple[str, dict]] = []
        self.fail_with: int | None = None
        super().__init__(str(path), _StubHandler)


class _StubHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: StubSearch

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.requests.append((self.path, body))
        if self.server.fail_with:
            self._reply(self.server.fail_with, {"error": "index not loaded"})
        elif self.path == "/search/web" and self.server.task == "single-source-augmentation":
            self._reply(403, {"error": "web search is not available in this task"})
        elif self.path == "/search/web":
            self._reply(200, {"results": [WEB_RESULT] * min(body["k"], 2)})
        else:
            self._reply(200, {"results": [IMAGE_RESULT] * body["k"]})

    def _reply(self, status: int, payload: dict) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def stub(tmp_path: Path) -> Iterator:
    """``stub(task, path=None)`` starts a stub search service on a Unix socket."""
    servers: list[StubSearch] = []

    def start(task: str = "multi-source-augmentation", path: Path | None = None) -> StubSearch:
        server = StubSearch(path or tmp_path / f"search{len(servers)}.sock", task)
        os.chmod(server.server_address, 0o666)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()
