"""The search service end to end: a real HTTP client over a real Unix socket."""

from __future__ import annotations

import base64
import io
import json
import os
import socket
import stat
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from PIL import Image

from tests.workers.search.helpers import draw_entity, entity_name
from workers.search.engine import SearchEngine
from workers.search.queries import TEXT_QUERY_REFUSED
from workers.search.service import (
    MAX_BODY_BYTES,
    MAX_CONNECTIONS,
    MAX_SEARCHES_AT_ONCE,
    SearchService,
    start_search_service,
)

TASK1, TASK2 = "single-source-augmentation", "multi-source-augmentation"


def _serve(engine: SearchEngine, socket_dir: Path, task: str) -> SearchService:
    return start_search_service(engine, socket_dir / "search.sock", task)


def _client(service: SearchService) -> httpx.Client:
    transport = httpx.HTTPTransport(uds=str(service.socket_path))
    return httpx.Client(transport=transport, base_url="http://search", timeout=30)


def _png_b64(seed: int) -> str:
    buffer = io.BytesIO()
    draw_entity(seed).save(buffer, "PNG")
    return base64.b64encode(buffer.getvalue()).decode()


def _raw(service: SearchService, request: bytes) -> bytes:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(10)
        conn.connect(str(service.socket_path))
        conn.sendall(request)
        return conn.recv(65536)


def test_image_and_web_search_over_the_socket(engine: SearchEngine, socket_dir: Path) -> None:
    with _serve(engine, socket_dir, TASK2) as service, _client(service) as client:
        reply = client.post("/search/image", json={"image_b64": _png_b64(6), "k": 3})
        assert reply.status_code == 200
        assert reply.headers["content-type"] == "application/json"
        results = reply.json()["results"]
        assert results == json.loads(json.dumps(engine.image_search(draw_entity(6), k=3)))
        assert results[0]["entities"][0]["entity_name"] == entity_name(6)

        query = f"When was the {entity_name(8)} first made?"
        reply = client.post("/search/web", json={"query": query, "k": 4})
        assert reply.status_code == 200
        web = reply.json()["results"]
        assert web[0]["page_url"] == "https://example.org/08"
        fields = {"index", "score", "page_name", "page_snippet", "page_url", "page_content"}
        assert set(web[0]) == fields
        assert "1908" in web[0]["page_content"]  # the page's text, from the corpus
        default_k = client.post("/search/image", json={"image_b64": _png_b64(1)}).json()
        assert len(default_k["results"]) == 5

        # an image URL (the official pipeline downloads it): the corpus' own URLs resolve
        by_url = client.post("/search/image", json={"image_url": "https://img/6", "k": 3})
        assert by_url.status_code == 200 and by_url.json()["results"][0]["url"] == "https://img/6"
        elsewhere = client.post("/search/image", json={"image_url": "https://other/x.jpg"})
        assert elsewhere.status_code == 400 and "no network" in elsewhere.json()["error"]
        both = client.post("/search/image", json={"image_url": "https://img/6", "image_b64": "x"})
        assert both.status_code == 400 and "one of 'image_b64' and 'image_url'" in both.text


def test_task_one_service_refuses_web_search_with_the_official_message(
    engine: SearchEngine, socket_dir: Path
) -> None:
    with _serve(engine, socket_dir, TASK1) as service, _client(service) as client:
        reply = client.post("/search/web", json={"query": "anything", "k": 5})
        assert reply.status_code == 403
        assert reply.json() == {"error": TEXT_QUERY_REFUSED}
        ok = client.post("/search/image", json={"image_b64": _png_b64(0), "k": 1})
        assert ok.status_code == 200  # the same connection keeps working


BAD_REQUESTS = [
    ("/search/image", b"{not json", 400, "body is not JSON"),
    ("/search/image", b"[1]", 400, "body must be a JSON object"),
    ("/search/image", b"\xff\xfe", 400, "body is not JSON"),
    ("/search/image", b"{}", 400, "field 'image_b64' must be a non-empty base64 string"),
    ("/search/image", b'{"image_b64": "***"}', 400, "field 'image_b64' is not valid base64"),
    ("/search/image", b'{"image_b64": "aGVsbG8="}', 400, "image is not a decodable picture"),
    ("/search/image", b"TRUNCATED", 400, "image is not a decodable picture"),
    ("/search/web", b'{"query": ""}', 400, "query must be a non-empty string"),
    ("/search/web", b'{"query": 5}', 400, "query must be a non-empty string"),
    ("/search/web", b'{"query": "x", "k": 0}', 400, "k must be an integer from 1 to 1000"),
    ("/search/web", b'{"query": "x", "k": "3"}', 400, "k must be an integer"),
    ("/search/nothing", b"{}", 404, "no such path '/search/nothing'"),
]


@pytest.mark.parametrize(("path", "body", "status", "message"), BAD_REQUESTS)
def test_bad_requests_get_a_clear_error(
    engine: SearchEngine, socket_dir: Path, path: str, body: bytes, status: int, message: str
) -> None:
    if body == b"TRUNCATED":  # a PNG cut short: the header reads, the pixels do not
        body = json.dumps({"image_b64": _png_b64(0)[:200]}).encode()
    with _serve(engine, socket_dir, TASK2) as service, _client(service) as client:
        reply = client.post(path, content=body)
        assert reply.status_code == status
        assert message in reply.json()["error"]
        again = client.post("/search/web", json={"query": "lighthouse", "k": 1})
        assert again.status_code == 200


def test_a_small_file_expanding_to_a_huge_picture_is_refused(
    engine: SearchEngine, socket_dir: Path
) -> None:
    buffer = io.BytesIO()
    Image.new("1", (10_000, 5_000)).save(buffer, "PNG")  # a few kB, 50 megapixels
    body = {"image_b64": base64.b64encode(buffer.getvalue()).decode()}
    with _serve(engine, socket_dir, TASK1) as service, _client(service) as client:
        reply = client.post("/search/image", json=body)
    assert reply.status_code == 400
    assert reply.json()["error"] == "image is 10000x5000, over the 24000000-pixel limit"


def test_wrong_method_missing_length_and_huge_bodies_are_refused(
    engine: SearchEngine, socket_dir: Path
) -> None:
    with _serve(engine, socket_dir, TASK2) as service:
        with _client(service) as client:
            reply = client.get("/search/image")
            assert (reply.status_code, reply.json()) == (405, {"error": "use POST"})
        no_length = _raw(service, b"POST /search/web HTTP/1.1\r\nHost: s\r\n\r\n")
        assert no_length.startswith(b"HTTP/1.1 411 ") and b"Content-Length" in no_length
        huge = f"POST /search/image HTTP/1.1\r\nContent-Length: {MAX_BODY_BYTES + 1}\r\n\r\n"
        reply = _raw(service, huge.encode() + b"x" * 1000)
        assert reply.startswith(b"HTTP/1.1 413 ") and b"Connection: close" in reply
        negative = _raw(service, b"POST /search/web HTTP/1.1\r\nContent-Length: -4\r\n\r\n")
        assert negative.startswith(b"HTTP/1.1 400 ")


def test_concurrent_clients_are_served(engine: SearchEngine, socket_dir: Path) -> None:
    with _serve(engine, socket_dir, TASK2) as service:

        def ask(i: int) -> int:
            with _client(service) as client:
                reply = client.post("/search/image", json={"image_b64": _png_b64(i), "k": 1})
                return reply.json()["results"][0]["index"]

        with ThreadPoolExecutor(8) as pool:
            assert list(pool.map(ask, range(16))) == list(range(16))


def test_socket_is_open_to_the_container_user_and_removed_on_close(
    engine: SearchEngine, socket_dir: Path
) -> None:
    service = _serve(engine, socket_dir, TASK1)
    try:
        assert stat.S_IMODE(service.socket_path.stat().st_mode) == 0o666
        if os.geteuid() == 0 and Path("/usr/bin/python3").exists():
            script = (
                "import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]);"
                "s.sendall(b'POST /search/web HTTP/1.1\\r\\nContent-Length: 2\\r\\n\\r\\n{}');"
                "print(s.recv(100).split(b'\\r\\n')[0].decode())"
            )
            done = subprocess.run(
                ["/usr/bin/python3", "-c", script, str(service.socket_path)],
                user=10001,
                capture_output=True,
                text=True,
                timeout=30,
                check=True,
            )
            assert done.stdout.strip() == "HTTP/1.1 403 Forbidden"
    finally:
        service.close()
    assert not service.socket_path.exists()


def test_stale_socket_is_replaced_but_other_files_are_not(
    engine: SearchEngine, socket_dir: Path
) -> None:
    path = socket_dir / "search.sock"
    stale = socket.socket(socket.AF_UNIX)
    stale.bind(str(path))
    stale.close()
    with start_search_service(engine, path, TASK1) as service, _client(service) as client:
        assert client.post("/search/image", json={"image_b64": _png_b64(2)}).status_code == 200
    path.write_text("not a socket")
    with pytest.raises(FileExistsError, match="not a socket"):
        start_search_service(engine, path, TASK1)
    with pytest.raises(ValueError, match="unknown task"):
        start_search_service(engine, socket_dir / "other.sock", "task-9")


def test_a_connection_flood_is_refused_at_once_and_makes_no_thread(
    engine: SearchEngine, socket_dir: Path
) -> None:
    """Idle connections up to the cap; every one after it is answered 503 and closed, with no
    thread made for it; once the idle ones go, searching works again."""
    with _serve(engine, socket_dir, TASK2) as service:
        idle = []
        for _ in range(MAX_CONNECTIONS):
            conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            conn.connect(str(service.socket_path))
            idle.append(conn)
        time.sleep(0.3)  # the server has taken them all
        threads = threading.active_count()
        started = time.monotonic()
        for _ in range(200):  # answered before it sends anything
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
                conn.settimeout(10)
                conn.connect(str(service.socket_path))
                reply = conn.recv(65536)
            assert reply.startswith(b"HTTP/1.1 503 ") and b"at most 8 at once" in reply
        assert time.monotonic() - started < 10
        assert threading.active_count() <= threads + 1
        for conn in idle:
            conn.close()
        time.sleep(0.3)
        with _client(service) as client:
            assert client.post("/search/web", json={"query": "lighthouse"}).status_code == 200


def test_searches_at_once_are_bounded_whatever_the_connections(
    engine: SearchEngine, socket_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    inside, peak, lock = 0, 0, threading.Lock()
    search = engine.image_search

    def counted(*args, **kwargs):
        nonlocal inside, peak
        with lock:
            inside += 1
            peak = max(peak, inside)
        time.sleep(0.05)
        try:
            return search(*args, **kwargs)
        finally:
            with lock:
                inside -= 1

    monkeypatch.setattr(engine, "image_search", counted)
    with _serve(engine, socket_dir, TASK2) as service:

        def ask(i: int) -> int:
            with _client(service) as client:
                return client.post("/search/image", json={"image_b64": _png_b64(i)}).status_code

        with ThreadPoolExecutor(8) as pool:
            assert set(pool.map(ask, range(16))) == {200}
    assert peak == MAX_SEARCHES_AT_ONCE


def test_a_batch_gets_the_searches_the_runner_allows_it(
    engine: SearchEngine, socket_dir: Path
) -> None:
    with _serve(engine, socket_dir, TASK2) as service, _client(service) as client:
        service.allow(3)  # the runner, as it sends a batch
        codes = [
            client.post("/search/web", json={"query": "lighthouse"}).status_code for _ in range(4)
        ]
        assert codes == [200, 200, 200, 429]
        refused = client.post("/search/image", json={"image_b64": _png_b64(0)})
        assert refused.json() == {"error": "more than the 3 searches allowed for this batch"}
        service.allow(1)  # the next batch
        assert client.post("/search/web", json={"query": "lighthouse"}).status_code == 200
        service.allow(None)
        assert {client.post("/search/web", json={"query": "x"}).status_code for _ in range(5)} == {
            200
        }
