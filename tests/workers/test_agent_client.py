"""The runner's HTTP-over-Unix-socket client against real socket servers that misbehave."""

from __future__ import annotations

import contextlib
import json
import os
import socketserver
import threading
import time
from pathlib import Path

import pytest

from workers import agent_client
from workers.agent_client import (
    AgentClient,
    AgentTimeout,
    AgentUnavailable,
    ProtocolError,
    batch_responses,
    encode_batch,
)


def http_response(status: int, body: bytes, extra: bytes = b"") -> bytes:
    return (
        f"HTTP/1.1 {status} X\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n".encode()
        + extra
        + b"\r\n"
        + body
    )


SECRET = b"what is the private test query number 17"


class Behaviour(socketserver.StreamRequestHandler):
    """Answers each request according to the server's ``mode``."""

    def handle(self) -> None:
        while True:
            request_line = self.rfile.readline()
            if not request_line:
                return
            length = 0
            while (line := self.rfile.readline()) not in (b"\r\n", b""):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            self.rfile.read(length)
            self.server.requests += 1
            mode = self.server.mode
            if mode == "silent":
                time.sleep(30)
                return
            if mode == "drip":
                self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n")
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # it gave up
                    for _ in range(1000):
                        self.wfile.write(b" ")
                        self.wfile.flush()
                        time.sleep(0.1)
                return
            if mode == "close":
                return
            if mode == "garbage":
                self.wfile.write(b"this is not http\r\n\r\n")
                return
            if mode == "echo_status":  # a status line carrying what the request held
                self.wfile.write(b"HTTP/1.1 " + SECRET + b" x" * 2000 + b"\r\n\r\n")
                return
            if mode == "echo_version":  # the benchmark version, likewise
                self.wfile.write(b"HTTP/" + SECRET.replace(b" ", b"_") + b" 200 OK\r\n\r\n")
                return
            if mode == "interim":  # 100 Continue first, then the response in chunks
                self.wfile.write(b"HTTP/1.1 100 Continue\r\n\r\n")
                self.wfile.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
                self.wfile.write(b'9\r\n{"respons\r\n11\r\nes": ["chunked"]}\r\n0\r\n\r\n')
                continue
            if mode == "until_close":  # no length: the body ends with the connection
                self.wfile.write(b'HTTP/1.1 200 OK\r\n\r\n{"responses": ["all"]}')
                return
            if mode == "short":  # the connection closes before the length given
                self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\n{")
                return
            if mode == "closing":  # says so: the client connects again for the next call
                self.wfile.write(http_response(200, b'{"responses": []}', b"Connection: close\r\n"))
                return
            if mode == "trailing":  # bytes after the response
                extra = (
                    b"HTTP/1.1 junk\r\n" if self.server.requests == 1 else http_response(200, b"[]")
                )
                self.wfile.write(http_response(200, b'{"responses": []}') + extra)
                continue
            if mode == "endless_head":
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self.wfile.write(b"HTTP/1.1 200 OK\r\n" + b"X-Pad: " + b"y" * 200_000)
                return
            if mode == "huge":
                self.wfile.write(http_response(200, b'"' + b"x" * 5000 + b'"'))
            elif mode == "bad_utf8":
                self.wfile.write(http_response(200, b'{"responses": ["ok \xff\xfe end"]}'))
            elif mode == "ready":
                body = {"ready": True, "batch_size": 40, "kit": "B"}
                self.wfile.write(http_response(200, json.dumps(body).encode()))
            elif mode == "loading":
                self.wfile.write(http_response(503, b'{"ready": false}'))
            elif mode == "load_failed":
                self.wfile.write(http_response(500, b'{"ready": false, "error": "no weights"}'))
            elif mode == "load_failed_echo":  # a huge error carrying what it knows
                error = json.dumps({"ready": False, "error": SECRET.decode() * 5000})
                self.wfile.write(http_response(500, error.encode()))
            elif mode == "load_failed_silent":  # a failure status, no words
                self.wfile.write(http_response(502, b"{}"))
            elif mode == "echo_body":  # a body that is not JSON, carrying what the request held
                self.wfile.write(http_response(200, b"<html>" + SECRET + b"</html>"))
            else:
                self.wfile.write(http_response(200, b'{"responses": ["fine"]}'))


class Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True

    def __init__(self, path: Path, mode: str) -> None:
        super().__init__(str(path), Behaviour)
        self.mode = mode
        self.requests = 0


@pytest.fixture
def serve(tmp_path):
    servers = []

    def start(mode: str) -> Path:
        path = tmp_path / "agent.sock"
        server = Server(path, mode)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return path

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def test_keeps_one_connection_for_many_calls(serve):
    path = serve("ok")
    client = AgentClient(path)
    for _ in range(3):
        reply = client.batch(b"{}", timeout_s=2)
        assert reply.status == 200 and reply.body == {"responses": ["fine"]}
    client.close()


def test_a_request_goes_out_in_one_write(serve, monkeypatch):
    """Head and body together: the agent's server wakes once and finds the whole request."""
    writes: list[bytes] = []
    sendall = agent_client._DeadlineSocket.sendall

    def recording(self, data, flags=0):
        writes.append(bytes(data))
        return sendall(self, data, flags)

    monkeypatch.setattr(agent_client._DeadlineSocket, "sendall", recording)
    client = AgentClient(serve("ok"))
    body = encode_batch("1", 5.0, {"turns": [{"query": "q" * 5000}]})
    for _ in range(2):
        assert client.batch(body, timeout_s=2).status == 200
    client.close()
    assert len(writes) == 2
    for write in writes:
        assert write.startswith(b"POST /batch HTTP/1.1\r\n")
        assert write.endswith(b"\r\n\r\n" + body)
        assert f"Content-Length: {len(body)}\r\n".encode() in write


@pytest.mark.parametrize("mode", ["silent", "drip"])
def test_deadline_holds_against_silent_and_dripping_agents(serve, mode):
    client = AgentClient(serve(mode))
    started = time.monotonic()
    with pytest.raises(AgentTimeout):
        client.batch(b"{}", timeout_s=0.5)
    assert time.monotonic() - started < 1.5


def test_oversized_body_is_a_protocol_error(serve):
    client = AgentClient(serve("huge"), max_body_bytes=1000)
    with pytest.raises(ProtocolError, match="larger than 1000 bytes"):
        client.batch(b"{}", timeout_s=2)


def test_invalid_utf8_is_replaced_not_fatal(serve):
    reply = AgentClient(serve("bad_utf8")).batch(b"{}", timeout_s=2)
    assert reply.body == {"responses": ["ok \ufffd\ufffd end"]}


def test_garbage_is_a_protocol_error_and_a_hang_up_means_unavailable(serve, tmp_path):
    with pytest.raises(ProtocolError, match="malformed HTTP"):
        AgentClient(serve("garbage")).batch(b"{}", timeout_s=2)
    os.unlink(tmp_path / "agent.sock")
    with pytest.raises(AgentUnavailable):
        AgentClient(serve("close")).batch(b"{}", timeout_s=2)


@pytest.mark.parametrize(
    ("mode", "responses", "closed"),
    [("interim", ["chunked"], False), ("until_close", ["all"], True), ("closing", [], True)],
)
def test_responses_framed_every_way_http_allows_are_read(serve, mode, responses, closed):
    """An interim 100, a chunked body, a body ended by the connection's close, and a
    ``Connection: close``: each read whole, and a closed connection is opened again."""
    server_path = serve(mode)
    client = AgentClient(server_path)
    for _ in range(2):
        reply = client.batch(b"{}", timeout_s=2)
        assert (reply.status, reply.body) == (200, {"responses": responses})
        assert (client._sock is None) == closed


def test_a_response_cut_short_or_followed_by_bytes_or_with_an_endless_head(serve, tmp_path):
    with pytest.raises(AgentUnavailable, match="closed mid-response"):
        AgentClient(serve("short")).batch(b"{}", timeout_s=2)
    os.unlink(tmp_path / "agent.sock")
    client = AgentClient(serve("trailing"))  # answered; the connection is not used again
    for _ in range(2):  # junk after the response, then a second response
        assert client.batch(b"{}", timeout_s=2).body == {"responses": []}
        assert client._sock is None
    os.unlink(tmp_path / "agent.sock")
    with pytest.raises(ProtocolError, match="headers over 65536 bytes") as refused:
        AgentClient(serve("endless_head")).batch(b"{}", timeout_s=2)
    assert refused.value.agent_text.startswith("HTTP/1.1 200 OK\r\nX-Pad: yyy")


def test_missing_socket_is_unavailable(tmp_path):
    with pytest.raises(AgentUnavailable, match="does not exist"):
        AgentClient(tmp_path / "agent.sock").ready()


def test_symlink_planted_by_the_agent_is_not_followed(serve, tmp_path):
    real = serve("ok")
    link = tmp_path / "link.sock"
    link.symlink_to(real)
    with pytest.raises(ProtocolError, match="not a socket"):
        AgentClient(link).batch(b"{}", timeout_s=2)
    plain = tmp_path / "plain"
    plain.write_text("x")
    with pytest.raises(ProtocolError, match="not a socket"):
        AgentClient(plain).batch(b"{}", timeout_s=2)


def test_readiness_states(serve, tmp_path):
    ready = AgentClient(serve("ready")).ready()
    assert ready.ready and ready.batch_size == 16 and ready.kit == "B"
    for mode, expected in (
        ("loading", (False, None, "")),
        ("load_failed", (False, 500, "no weights")),
    ):
        os.unlink(tmp_path / "agent.sock")
        readiness = AgentClient(serve(mode)).ready()
        assert (readiness.ready, readiness.failed_status, readiness.error) == expected


def test_encode_batch_is_ascii_json_that_round_trips():
    turns = [
        {"query": 'é \x00 "quoted"', "turn_idx": 0, "image_path": "/podium/images/ab.jpg"},
        {"query": "plain", "turn_idx": 1, "image_path": None},
    ]
    body = encode_batch("7", 20.0, {"turns": turns})
    assert body.isascii()
    assert json.loads(body) == {"batch_id": "7", "deadline_s": 20.0, "turns": turns}


@pytest.mark.parametrize(
    "body",
    [
        None,
        [],
        {"batch_id": "3", "responses": "x"},
        {"batch_id": "3", "responses": ["a"]},
    ],
)
def test_batch_responses_must_be_one_response_per_item(body):
    with pytest.raises(ProtocolError, match="/batch"):
        batch_responses(body, 2, "3")
    good = {"batch_id": "3", "responses": ["a", "b"], "elapsed_s": 0.1}
    assert batch_responses(good, 2, "3") == ["a", "b"]
    assert batch_responses({**good, "batch_id": 3}, 2, "3") == ["a", "b"]  # a number echoed


@pytest.mark.parametrize("named", [None, "2", 4, True, ["3"], "3 "], ids=repr)
def test_a_reply_naming_another_batch_is_refused(named):
    body = {"responses": ["a", "b"]} | ({} if named is None else {"batch_id": named})
    with pytest.raises(ProtocolError, match=r"naming the batch sent \(batch 3\)") as refused:
        batch_responses(body, 2, "3")
    said = "no batch" if named is None else "another batch: its answers were not filed"
    assert str(refused.value).endswith(f"the reply named {said}")
    if named is not None:  # what it named is the agent's text, never the reason
        assert refused.value.agent_text == json.dumps(named)


def test_a_refused_reply_is_the_agents_text_and_never_the_reason():
    secret = SECRET.decode()
    for body in (
        {"batch_id": secret, "responses": ["a", "b"]},
        {"batch_id": "3", "responses": [secret]},
        {"responses": [secret, secret]},
    ):
        with pytest.raises(ProtocolError) as refused:
            batch_responses(body, 2, "3")
        assert "private test" not in str(refused.value)
        assert secret in refused.value.agent_text


def test_a_body_that_is_not_json_is_kept_apart_from_the_reason(serve):
    with pytest.raises(ProtocolError) as refused:
        AgentClient(serve("echo_body")).batch(b"{}", timeout_s=2)
    assert str(refused.value) == "/batch: HTTP 200 body is not JSON"
    assert refused.value.agent_text == f"<html>{SECRET.decode()}</html>"


def test_a_load_failure_keeps_the_agents_words_apart_and_capped(serve, tmp_path):
    readiness = AgentClient(serve("load_failed_echo")).ready()
    assert (readiness.ready, readiness.failed_status) == (False, 500)
    assert readiness.error.startswith(SECRET.decode()) and len(readiness.error) == 64 * 1024
    os.unlink(tmp_path / "agent.sock")
    readiness = AgentClient(serve("load_failed_silent")).ready()
    assert (readiness.ready, readiness.failed_status, readiness.error) == (False, 502, "")


@pytest.mark.parametrize("mode", ["echo_status", "echo_version"])
def test_the_agents_bytes_are_kept_apart_from_the_reason(serve, mode):
    with pytest.raises(ProtocolError) as refused:
        AgentClient(serve(mode)).batch(b"{}", timeout_s=2)
    secret = SECRET.decode() if mode == "echo_status" else SECRET.decode().replace(" ", "_")
    assert str(refused.value).startswith("/batch: malformed HTTP response (")
    assert "private test query" not in str(refused.value).replace("_", " ")
    assert secret in refused.value.agent_text
