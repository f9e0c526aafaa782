"""The package-index gate's proxy, without Docker: it reaches the index's host and port only."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.package_index import serve_index, wheel
from workers import package_index
from workers.dockerfile import pin_base_images
from workers.package_index import IndexProxy, IndexURLError, PackageIndex


def test_an_index_url_is_http_or_https_without_credentials():
    index = PackageIndex.parse(" https://PyPI.example.org/simple/ ")
    assert (index.url, index.host, index.port, index.secure) == (
        "https://PyPI.example.org/simple/",
        "pypi.example.org",
        443,
        True,
    )
    args = index.build_args()
    assert args["PIP_INDEX_URL"] == "https://PyPI.example.org/simple/"
    assert args["HTTPS_PROXY"] == args["http_proxy"] == "http://127.0.0.1:3128"
    assert "PIP_TRUSTED_HOST" not in args
    plain = PackageIndex.parse("http://10.0.0.5:3141/root/pypi/+simple/")
    assert (plain.port, plain.build_args()["PIP_TRUSTED_HOST"]) == (3141, "10.0.0.5:3141")
    assert (index.authority, plain.authority) == ("pypi.example.org", "10.0.0.5:3141")
    assert PackageIndex.parse("http://[FD00::5]:8080/simple/").authority == "[fd00::5]:8080"
    for bad, why in [
        ("ftp://mirror/simple", "http:// or https://"),
        ("pypi.example.org/simple", "http:// or https://"),
        ("https://user:secret@pypi.example.org/simple", "may not carry credentials"),
        ("http://mirror:99999/simple", "out of range"),
    ]:
        with pytest.raises(IndexURLError, match=why):
            PackageIndex.parse(bad)


def test_every_stage_declares_the_index_arguments():
    text = "FROM base AS one\nRUN true\nFROM one\nRUN pip install x\n"
    pinned = pin_base_images(text, {"base": "sha256:ab"}.get, ("PIP_INDEX_URL", "X"))
    assert pinned == (
        "FROM sha256:ab AS one\nARG PIP_INDEX_URL\nARG X\nRUN true\n"
        "FROM one\nARG PIP_INDEX_URL\nARG X\nRUN pip install x\n"
    )


@pytest.fixture
def index(tmp_path) -> Iterator[tuple[str, list[str]]]:
    (tmp_path / "index/files").mkdir(parents=True)
    wheel(tmp_path / "index/files", "podium-test-dep", "1.0", {"podium_test_dep.py": ""})
    with serve_index(tmp_path / "index") as served:
        yield served


@contextmanager
def serving(path: Path, index_url: str) -> Iterator[IndexProxy]:
    server = IndexProxy(path, PackageIndex.parse(index_url))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def proxy(tmp_path, index) -> Iterator[IndexProxy]:
    with serving(tmp_path / "index.sock", index[0]) as server:
        yield server


def ask(path: Path, data: bytes) -> bytes:
    with socket.socket(socket.AF_UNIX) as sock:
        sock.settimeout(10)
        sock.connect(str(path))
        sock.sendall(data)
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
        return received


def test_the_index_is_reached_through_the_proxy(proxy, index):
    url, requests = index
    head = f"GET {url}podium-test-dep/ HTTP/1.1\r\nHost: x\r\nProxy-Connection: keep-alive\r\n\r\n"
    answer = ask(Path(proxy.server_address), head.encode())
    assert answer.startswith(b"HTTP/1.0 200") and b"podium_test_dep-1.0-py3-none-any.whl" in answer
    assert requests == ["/simple/podium-test-dep/"]
    host_port = url.split("/")[2]
    with socket.socket(socket.AF_UNIX) as sock:  # CONNECT: a tunnel, bytes both ways
        sock.settimeout(10)
        sock.connect(proxy.server_address)
        sock.sendall(f"CONNECT {host_port} HTTP/1.1\r\nHost: {host_port}\r\n\r\n".encode())
        assert sock.recv(1024) == b"HTTP/1.1 200 Connection established\r\n\r\n"
        sock.sendall(b"GET /simple/podium-test-dep/ HTTP/1.0\r\n\r\n")
        tunnelled = b""
        while chunk := sock.recv(65536):
            tunnelled += chunk
    assert tunnelled.startswith(b"HTTP/1.0 200") and b".whl" in tunnelled
    assert proxy.refused == []


@contextmanager
def recording_index() -> Iterator[tuple[str, list[bytes]]]:
    """An index on 127.0.0.1 that answers every request 200 "ok": its URL, and the request heads
    it received."""
    heads: list[bytes] = []
    listener = socket.create_server(("127.0.0.1", 0))

    def answer() -> None:
        with contextlib.suppress(OSError):
            while True:
                conn, _ = listener.accept()
                with conn:
                    head = b""
                    while b"\r\n\r\n" not in head and (chunk := conn.recv(4096)):
                        head += chunk
                    heads.append(head)
                    conn.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok")

    threading.Thread(target=answer, daemon=True).start()
    with listener:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/simple/", heads


def test_the_index_gets_its_own_host_whatever_host_the_build_sends(tmp_path):
    """A build's request naming another virtual host on the index's address reaches the index
    under the index's own name: the Host header is the proxy's, not the build's."""
    with recording_index() as (url, heads), serving(tmp_path / "p.sock", url) as server:
        authority = url.split("/")[2]
        head = (
            f"GET {url}x/ HTTP/1.1\r\nHost: admin.internal\r\nAccept: */*\r\n"
            "host:intranet.example\r\nHOST : metadata.internal\r\n\r\n"
        )
        assert ask(Path(server.server_address), head.encode()).endswith(b"\r\n\r\nok")
    [received] = heads
    lines = received.split(b"\r\n")
    assert lines[0] == b"GET /simple/x/ HTTP/1.1"
    assert [line for line in lines if line.lower().startswith(b"host")] == [
        f"Host: {authority}".encode()
    ]
    assert b"Accept: */*" in lines and b"internal" not in received and b"example" not in received


@pytest.mark.parametrize(
    ("smuggled", "why"),
    [
        # a folded line: part of X-Note to some servers, a header of its own to others
        ("GET {url} HTTP/1.1\r\nX-Note: a\r\n Host: admin.internal", b"header line"),
        ("GET {url} HTTP/1.1\r\nX-Note: a\nHost: admin.internal", b"header line"),  # bare LF
        ("GET {url} HTTP/1.1\r\nX-Note: a\rHost: admin.internal", b"header line"),  # bare CR
        ("GET {url} HTTP/1.1\nHost:admin.internal", b"request line"),
        ("X\nHost:admin.internal\nGET {url} HTTP/1.1", b"request line"),
    ],
)
def test_a_header_that_servers_may_split_differently_is_refused(proxy, index, smuggled, why):
    head = smuggled.format(url=index[0]) + "\r\n\r\n"
    answer = ask(Path(proxy.server_address), head.encode())
    assert answer.startswith(b"HTTP/1.1 400") and why in answer
    assert index[1] == []


@pytest.mark.parametrize(
    ("request_head", "destination"),
    [
        ("GET http://example.org/ HTTP/1.1\r\nHost: example.org\r\n\r\n", "example.org:80"),
        ("CONNECT pypi.org:443 HTTP/1.1\r\nHost: pypi.org:443\r\n\r\n", "pypi.org:443"),
        ("CONNECT 127.0.0.1:5432 HTTP/1.1\r\n\r\n", "127.0.0.1:5432"),  # the index's host
    ],
)
def test_any_other_destination_is_refused_and_recorded(proxy, index, request_head, destination):
    answer = ask(Path(proxy.server_address), request_head.encode())
    assert answer.startswith(b"HTTP/1.1 403 Forbidden")
    assert b"is not the challenge's package index" in answer
    assert proxy.refused == [destination]


def test_malformed_and_oversized_requests_are_answered_400(proxy):
    tls = b"\x16\x03\x01 hello\r\n\r\n"  # not HTTP
    assert ask(Path(proxy.server_address), tls).startswith(b"HTTP/1.1 400")
    huge = b"GET http://x/ HTTP/1.1\r\nX: " + b"a" * (package_index.HEAD_MAX_BYTES + 10)
    assert ask(Path(proxy.server_address), huge).startswith(b"HTTP/1.1 400")
    relative = b"GET /simple/ HTTP/1.1\r\nHost: x\r\n\r\n"
    assert b"not an absolute http:// request" in ask(Path(proxy.server_address), relative)


def test_connections_past_the_cap_are_turned_away(tmp_path, index, monkeypatch):
    monkeypatch.setattr(package_index, "MAX_CONNECTIONS", 2)
    server = IndexProxy(tmp_path / "capped.sock", PackageIndex.parse(index[0]))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        idle = [socket.socket(socket.AF_UNIX) for _ in range(2)]
        for sock in idle:  # connected, sending nothing: each holds a slot
            sock.connect(server.server_address)
        answer = b""
        for _ in range(50):  # the server thread accepts them one by one
            answer = ask(Path(server.server_address), b"CONNECT x:1 HTTP/1.1\r\n\r\n")
            if answer.startswith(b"HTTP/1.1 503"):
                break
        assert answer.startswith(b"HTTP/1.1 503") and b"more than 2 connections" in answer
        for sock in idle:
            sock.close()
    finally:
        server.shutdown()
        server.server_close()


def test_refused_destinations_are_named_once_and_only_the_first_few(proxy, monkeypatch):
    monkeypatch.setattr(package_index, "REFUSED_KEPT", 3)
    for host in ["a.org", "a.org", "b.org", "c.org", "d.org", "e.org"]:
        answer = ask(Path(proxy.server_address), f"CONNECT {host}:443 HTTP/1.1\r\n\r\n".encode())
        assert answer.startswith(b"HTTP/1.1 403")  # every one refused, only some named
    assert proxy.refused == ["a.org:443", "b.org:443", "c.org:443"]
