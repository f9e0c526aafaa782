"""agentkit's server, run as ``python -m agentkit`` on the host with real Unix sockets."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import signal
import socket
import threading
import time
from pathlib import Path

import pytest
from PIL import Image

from tests.agentkit.conftest import UnixHTTPConnection, batch, jpeg_bytes, turn

KIT_A = """
    from agentkit.search import SearchPipeline

    class Agent:
        def __init__(self, search_pipeline):
            assert isinstance(search_pipeline, SearchPipeline)
            self.search_pipeline = search_pipeline

        def get_batch_size(self):
            return 40

        def batch_generate_response(self, queries, images, message_histories):
            return [
                f"{q}|{image.size if image else None}|{len(h)}|{h[-1]['content'] if h else ''}"
                f"|{self.search_pipeline.web_search}"
                for q, image, h in zip(queries, images, message_histories)
            ]
"""

GATED_LOAD = """
    import os, time

    class Agent:
        def __init__(self, search_pipeline):
            while not os.path.exists(os.environ["GATE"]):
                time.sleep(0.01)

        def get_batch_size(self):
            return 0

        def batch_generate_response(self, queries, images, message_histories):
            return ["ok"] * len(queries)
"""


def test_ready_is_503_while_loading_then_200_with_clipped_batch_size(start_agent, tmp_path):
    gate = tmp_path / "gate"
    agent = start_agent(GATED_LOAD, env={"GATE": str(gate)})
    status, body = agent.get()
    assert status == 503
    assert body["ready"] is False
    status, body = agent.post(batch(turn()))
    assert status == 503
    assert "still loading" in body["error"]
    gate.touch()
    status, body = agent.wait_loaded()
    assert status == 200
    assert body["ready"] is True
    assert body["batch_size"] == 1  # get_batch_size() returned 0
    assert body["kit"] == "A"
    assert body["agentkit_version"] and body["protocol_version"] == "3"


def test_kit_a_class_gets_queries_images_histories_and_search_pipeline(start_agent):
    agent = start_agent(KIT_A, env={"PODIUM_TASK": "single-source-augmentation"})
    status, ready = agent.wait_loaded()
    assert (status, ready["kit"], ready["batch_size"]) == (200, "A", 16)
    history = [
        {"role": "user", "content": "What is this?"},
        {"role": "assistant", "content": "a truncated answer"},
    ]
    status, body = agent.post(
        batch(
            turn("first", jpeg_bytes((32, 16))),
            turn("second", None, interaction_id="i2", turn_idx=1, message_history=history),
            batch_id="batch-7",
        )
    )
    assert status == 200, body
    assert body["batch_id"] == "batch-7"
    assert body["responses"] == [
        "first|(32, 16)|0||False",
        "second|None|2|a truncated answer|False",
    ]


KIT_B = """
    from typing import Any

    class Agent:
        def __init__(self, **kwargs: Any):
            self.kwargs = kwargs

        def get_batch_size(self) -> int:
            return 4

        def batch_generate_response(
            self, queries, images, message_histories, rag_context_list, **kwargs
        ):
            return [
                f"{q}|{rag}|{domain}|{sorted(self.kwargs.items())}"
                for q, rag, domain in zip(queries, rag_context_list, kwargs["domains"])
            ]
"""


def test_kit_b_class_gets_rag_context_domains_and_constructor_keywords(start_agent):
    agent = start_agent(
        KIT_B, env={"PODIUM_TASK": "multi-turn-qa", "PODIUM_MODEL_NAME": "my/model"}
    )
    status, ready = agent.wait_loaded()
    assert (status, ready["kit"], ready["batch_size"]) == (200, "B", 4)
    context = "<search results>x</search results>"
    status, body = agent.post(
        batch(
            turn("q1", jpeg_bytes(), rag_context=context, domain="food"),
            turn("q2", jpeg_bytes(), interaction_id="i2"),
        )
    )
    assert status == 200, body
    keywords = "[('is_multi_turn', True), ('model_name', 'my/model')]"
    assert body["responses"] == [
        f"q1|<search results>x</search results>|food|{keywords}",
        f"q2||None|{keywords}",
    ]


def test_kit_b_class_without_domains_or_kwargs_is_called_without_them(start_agent):
    source = """
        class Agent:
            def __init__(self, is_multi_turn=False):
                self.is_multi_turn = is_multi_turn

            def get_batch_size(self):
                return 2

            def batch_generate_response(self, queries, images, message_histories, rag_context_list):
                return [f"{self.is_multi_turn}:{rag}" for rag in rag_context_list]
    """
    agent = start_agent(source, env={"PODIUM_TASK": "multi-source-augmentation"})
    assert agent.wait_loaded()[0] == 200
    status, body = agent.post(batch(turn(rag_context="ctx", domain="food")))
    assert (status, body["responses"]) == (200, ["False:ctx"])


def test_load_failures_are_reported_with_the_participants_error(start_agent):
    cases = [
        (
            "class Agent:\n    def __init__(self, search_pipeline):\n"
            "        raise RuntimeError('weights missing')\n"
            "    def get_batch_size(self): return 1\n"
            "    def batch_generate_response(self, q, i, h): return []\n",
            "agent:Agent",
            "RuntimeError: weights missing",
        ),
        ("import not_installed_package\n", "agent:Agent", "ModuleNotFoundError"),
        ("class Other: pass\n", "agent:Agent", "has no attribute 'Agent'"),
        (
            "class Agent:\n    def get_batch_size(self): return 1\n",
            "agent:Agent",
            "has no method batch_generate_response()",
        ),
        ("class Agent: pass\n", "agent", "'module:Class'"),
        ("class Agent: pass\n", None, "PODIUM_AGENT"),  # and no kit user_config either
        (
            "class Agent:\n    def __init__(self, search_pipeline): pass\n"
            "    def get_batch_size(self): return 'eight'\n"
            "    def batch_generate_response(self, q, i, h): return []\n",
            "agent:Agent",
            "get_batch_size() returned 'eight'",
        ),
        (
            "class Agent:\n    def __init__(self, search_pipeline): pass\n"
            "    def get_batch_size(self): return 1\n"
            "    def batch_generate_response(self, queries): return []\n",
            "agent:Agent",
            "must take (queries, images, message_histories)",
        ),
    ]
    agents = [(start_agent(src, spec=spec), expected) for src, spec, expected in cases]
    for agent, expected in agents:
        status, body = agent.wait_loaded()
        assert status == 500, body
        assert body["ready"] is False
        assert expected in body["error"], body["error"]
        status, body = agent.post(batch(turn()))
        assert status == 500
        assert "failed to load" in body["error"]
        assert agent.process.poll() is None  # still serving /ready


@pytest.mark.parametrize("transport", ["image_path", "image_b64"])
def test_images_are_not_decoded_unless_the_agent_reads_pixels(start_agent, tmp_path, transport):
    source = """
        class Agent:
            def __init__(self, search_pipeline): pass
            def get_batch_size(self): return 2
            def batch_generate_response(self, queries, images, message_histories):
                answers = []
                for query, image in zip(queries, images):
                    if query == "pixels":
                        image.load()
                    answers.append(f"{image.format} {image.size}")
                return answers
    """
    agent = start_agent(source)
    assert agent.wait_loaded()[0] == 200
    whole = jpeg_bytes((800, 600))
    broken = whole[: len(whole) // 3]  # a valid header, most of the pixel data missing
    if transport == "image_path":
        (tmp_path / "broken.jpg").write_bytes(broken)
        broken = tmp_path / "broken.jpg"
    status, body = agent.post(batch(turn("header only", broken)))
    assert (status, body["responses"]) == (200, ["JPEG (800, 600)"])
    status, body = agent.post(batch(turn("pixels", broken)))
    assert status == 500
    assert body["error"].startswith("the agent raised OSError")


def test_kit_a_searches_with_an_image_file_as_its_original_bytes(start_agent, stub, tmp_path):
    source = """
        class Agent:
            def __init__(self, search_pipeline):
                self.search_pipeline = search_pipeline
            def get_batch_size(self): return 2
            def batch_generate_response(self, queries, images, message_histories):
                return [
                    self.search_pipeline(image, k=1)[0]["entities"][0]["entity_name"]
                    + f" {image.size}"
                    for image in images
                ]
    """
    agent = start_agent(source, env={"PODIUM_TASK": "multi-turn-qa"})
    assert agent.wait_loaded()[0] == 200
    server = stub("multi-turn-qa", agent.socket_dir / "search.sock")
    photo = tmp_path / "photo.jpg"
    photo.write_bytes(jpeg_bytes((96, 64), "green"))
    status, body = agent.post(batch(turn("a", photo), turn("b", photo, interaction_id="i2")))
    assert (status, body["responses"]) == (200, ["Model T (96, 64)", "Model T (96, 64)"])
    sent = [base64.b64decode(request["image_b64"]) for _, request in server.requests]
    assert sent == [photo.read_bytes()] * 2


def test_an_image_the_agent_keeps_outlives_its_file(start_agent, tmp_path):
    source = """
        class Agent:
            def __init__(self, search_pipeline):
                self.kept = []
            def get_batch_size(self): return 1
            def batch_generate_response(self, queries, images, message_histories):
                self.kept.extend(image for image in images if image is not None)
                return [str(self.kept[0].convert("L").getpixel((0, 0)))]
    """
    agent = start_agent(source)
    assert agent.wait_loaded()[0] == 200
    photo = tmp_path / "white.png"
    Image.new("RGB", (8, 8), "white").save(photo)
    assert agent.post(batch(turn("keep it", photo)))[1]["responses"] == ["255"]
    photo.unlink()  # the runner removes a batch's files once they are not needed
    status, body = agent.post(batch(turn("decode it now")))
    assert (status, body["responses"]) == (200, ["255"])


def test_a_kept_undecoded_image_holds_no_removed_file(start_agent, tmp_path):
    """Files are mapped while a batch is answered; what the agent keeps is copied after, so a
    removed file's space is never held (under runc; the runner empties
    the batches agentkit let go of, for gVisor)."""
    source = """
        class Agent:
            def __init__(self, search_pipeline):
                self.kept = None
            def get_batch_size(self): return 2
            def batch_generate_response(self, queries, images, message_histories):
                if self.kept is None:
                    self.kept = images[0]  # undecoded
                    return ["kept", "dropped"]
                return [str(self.kept.convert("L").getpixel((0, 0))), self.kept.format]
    """
    agent = start_agent(source)
    assert agent.wait_loaded()[0] == 200
    kept, dropped = tmp_path / "kept.png", tmp_path / "dropped.png"
    Image.new("RGB", (8, 8), "white").save(kept)
    Image.new("RGB", (8, 8), "black").save(dropped)
    second = turn("b", dropped, interaction_id="i2")
    assert agent.post(batch(turn("a", kept), second))[1]["responses"] == ["kept", "dropped"]
    # released just after the answer is sent (before the next batch is read): wait for it
    maps = Path(f"/proc/{agent.process.pid}/maps")
    deadline = time.monotonic() + 5
    while str(kept) in maps.read_text() or str(dropped) in maps.read_text():
        assert time.monotonic() < deadline, "the batch's files are still mapped"
        time.sleep(0.01)
    kept.unlink()
    status, body = agent.post(batch(turn("c", dropped), second))
    assert (status, body["responses"]) == (200, ["255", "PNG"])


def test_bad_image_files_get_400_naming_the_turn(start_agent, tmp_path):
    agent = start_agent(KIT_A)
    assert agent.wait_loaded()[0] == 200
    good = turn("q")
    (tmp_path / "text.jpg").write_text("not a picture")
    os.mkfifo(tmp_path / "pipe.jpg")  # opening it must not wait for a writer
    cases = [
        ({**good, "image_path": "photo.jpg"}, "image_path must be an absolute file path or null"),
        ({**good, "image_path": 7}, "image_path must be an absolute file path or null, got int"),
        ({**good, "image_path": str(tmp_path / "gone.jpg")}, "cannot read"),
        ({**good, "image_path": str(tmp_path)}, f"{tmp_path} is not a regular file"),
        ({**good, "image_path": "/dev/zero"}, "/dev/zero is not a regular file"),
        ({**good, "image_path": str(tmp_path / "pipe.jpg")}, "pipe.jpg is not a regular file"),
        ({**good, "image_path": str(tmp_path / "text.jpg")}, "is not an image Pillow can read"),
        (
            {**good, "image_path": str(tmp_path / "text.jpg"), "image_b64": "aGVsbG8="},
            "has both image_path and image_b64",
        ),
    ]
    for bad_turn, message in cases:
        status, answer = agent.post(batch(good, bad_turn))
        assert status == 400, (bad_turn, answer)
        assert answer["error"].startswith("turns[1]"), answer["error"]
        assert message in answer["error"], (message, answer["error"])


def test_bad_bodies_get_400_with_the_field_named(start_agent):
    agent = start_agent(KIT_A)
    assert agent.wait_loaded()[0] == 200
    cases = [
        (b"{not json", "body is not JSON"),
        (b"\xff\xfe", "body is not"),
        (b"[1, 2]", "body must be a JSON object, got list"),
        (b'{"batch_id": "b", "turns": []}', "turns must be a non-empty list"),
        (b'{"batch_id": true, "turns": [{}]}', "batch_id must be a string or an integer"),
        (b'{"batch_id": "b", "deadline_s": -1, "turns": [{}]}', "deadline_s must be a positive"),
        (b'{"batch_id": "b", "deadline_s": NaN, "turns": [{}]}', "deadline_s must be a positive"),
        (b'{"batch_id": "b", "turns": [5]}', "turns[0] must be an object, got int"),
        (json.dumps(batch(*[turn()] * 17)).encode(), "turns holds 17 turns, more than 16"),
    ]
    good = turn("q", jpeg_bytes())
    bad_turns = [
        ({**good, "query": 3}, "turns[1].query must be a string, got int"),
        ({**good, "turn_idx": "0"}, "turns[1].turn_idx must be a non-negative integer"),
        ({**good, "image_b64": "@@@"}, "turns[1].image_b64 is not valid base64"),
        ({**good, "image_b64": "aGVsbG8="}, "turns[1].image_b64 is not an image Pillow can read"),
        (
            {**good, "message_history": [{"role": "system", "content": "x"}]},
            "turns[1].message_history[0].role must be one of",
        ),
        (
            {**good, "message_history": [{"role": "user"}]},
            "turns[1].message_history[0] must be an object with exactly 'role' and 'content'",
        ),
        ({**good, "rag_context": 1}, "turns[1].rag_context must be a string or null"),
    ]
    for bad_turn, message in bad_turns:
        cases.append((batch(good, bad_turn), message))
    for body, message in cases:
        raw = body if isinstance(body, bytes) else None
        status, answer = agent.post(None if raw else body, raw=raw)
        assert status == 400, (body, answer)
        assert message in answer["error"], (message, answer["error"])
    status, answer = agent.post(batch(good), path="/nowhere")
    assert (status, "no such path") == (404, answer["error"][:12])
    assert agent.post(batch(good))[0] == 200  # still serving


def _raw_exchange(path, data: bytes) -> bytes:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(10)
        sock.connect(str(path))
        sock.sendall(data)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def test_missing_or_oversized_content_length_is_refused_without_reading(start_agent):
    agent = start_agent(KIT_A)
    assert agent.wait_loaded()[0] == 200
    answer = _raw_exchange(agent.socket, b"POST /batch HTTP/1.1\r\nHost: x\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 400") and b"Content-Length header required" in answer
    answer = _raw_exchange(
        agent.socket, b"POST /batch HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999\r\n\r\n"
    )
    assert answer.startswith(b"HTTP/1.1 400") and b"outside 0.." in answer


def test_wrong_return_shapes_are_protocol_errors(start_agent):
    source = """
        class Agent:
            def __init__(self, search_pipeline): pass
            def get_batch_size(self): return 4
            def batch_generate_response(self, queries, images, message_histories):
                mode = queries[0]
                if mode == "str":
                    return "one answer"
                if mode == "short":
                    return ["only one"]
                if mode == "none":
                    return ["fine", None]
                if mode == "raise":
                    raise KeyError("missing key")
                return tuple("ok" for _ in queries)
    """
    agent = start_agent(source)
    assert agent.wait_loaded()[0] == 200
    expected = {
        "str": "protocol error: batch_generate_response returned str, expected a list of 2 strings",
        "short": "protocol error: batch_generate_response returned 1 responses for 2 queries",
        "none": "protocol error: batch_generate_response: response 1 is NoneType, expected str",
        "raise": "the agent raised KeyError: 'missing key'",
    }
    for mode, message in expected.items():
        status, body = agent.post(batch(turn(mode), turn("x", interaction_id="i2")))
        assert status == 500
        assert body["error"] == message
    status, body = agent.post(batch(turn("tuple"), turn("x", interaction_id="i2")))
    assert (status, body["responses"]) == (200, ["ok", "ok"])


def test_one_batch_at_a_time_on_the_main_thread_with_the_deadline(start_agent, tmp_path):
    gate = tmp_path / "gate"
    source = """
        import os, threading, time
        from agentkit.deadline import remaining_time

        class Agent:
            def __init__(self, search_pipeline): pass
            def get_batch_size(self): return 1
            def batch_generate_response(self, queries, images, message_histories):
                if queries[0] == "wait":
                    while not os.path.exists(os.environ["GATE"]):
                        time.sleep(0.01)
                left = remaining_time()
                main = threading.current_thread() is threading.main_thread()
                return [f"{main} {left is not None and 0 < left <= 5}"]
    """
    agent = start_agent(source, env={"GATE": str(gate)})
    assert agent.wait_loaded()[0] == 200
    first: dict = {}
    waiting = threading.Thread(
        target=lambda: first.update(answer=agent.post(batch(turn("wait"), deadline_s=5)))
    )
    waiting.start()
    time.sleep(0.3)
    status, body = agent.post(batch(turn("now"), batch_id="b2"))
    assert status == 409
    assert "b1 is still being answered" in body["error"]
    gate.touch()
    waiting.join(10)
    assert first["answer"] == (
        200,
        {
            "batch_id": "b1",
            "responses": ["True True"],
            "elapsed_s": first["answer"][1]["elapsed_s"],
        },
    )
    status, body = agent.post(batch(turn("now"), batch_id="b3", deadline_s=None))
    assert (status, body["responses"]) == (200, ["True False"])


def test_sigterm_stops_the_server_and_removes_the_socket(start_agent, tmp_path):
    agent = start_agent(KIT_A)
    assert agent.wait_loaded()[0] == 200
    agent.process.terminate()
    assert agent.process.wait(10) == 128 + 15
    assert not agent.socket.exists()
    loading = start_agent(GATED_LOAD, env={"GATE": str(tmp_path / "never")})
    assert loading.get()[0] == 503
    loading.process.terminate()
    assert loading.process.wait(5) == 128 + 15  # even in the middle of loading
    assert not loading.socket.exists()


def test_sigterm_right_after_a_batch_of_images_stops_the_server(start_agent, tmp_path):
    """The moment a batch is answered, the main thread releases its images' files: a SIGTERM
    landing then must stop the server as at any other moment (no finaliser swallows it)."""
    images = [tmp_path / f"{i}.jpg" for i in range(16)]
    for i, path in enumerate(images):
        path.write_bytes(jpeg_bytes(color=("red", "blue")[i % 2]))
    turns = [turn(f"q{i}", image=path, interaction_id=f"i{i}") for i, path in enumerate(images)]
    for _ in range(3):
        agent = start_agent(KIT_A)
        assert agent.wait_loaded()[0] == 200
        assert agent.post(batch(*turns))[0] == 200
        agent.process.terminate()
        assert agent.process.wait(10) == 128 + 15
        assert not agent.socket.exists()


def test_sigterm_caught_by_another_thread_than_the_main_one_still_ends_the_process(start_agent):
    """The kernel may hand a process's SIGTERM to any of its threads; the main thread, waiting
    for the next batch, is not woken by one that another thread caught, yet the process ends."""
    agent = start_agent(KIT_A)
    assert agent.wait_loaded()[0] == 200
    threads = [int(t) for t in os.listdir(f"/proc/{agent.process.pid}/task")]
    others = [tid for tid in threads if tid != agent.process.pid]
    assert others, "agentkit serves from threads of its own"
    started = time.monotonic()
    os.kill(others[0], signal.SIGTERM)  # Linux delivers it to that thread when it can
    assert agent.process.wait(10) == 128 + 15
    assert time.monotonic() - started < 1.5  # the main thread told: no watchdog grace (2 s)
    assert not agent.socket.exists()  # ... and it unwound as on any SIGTERM


def test_sigterm_ends_an_agent_that_swallows_it(start_agent):
    """An agent catching BaseException (Terminated too) cannot keep the process alive."""
    source = """
        import time

        class Agent:
            def __init__(self, search_pipeline): pass
            def get_batch_size(self): return 1
            def batch_generate_response(self, queries, images, message_histories):
                while True:
                    try:
                        time.sleep(0.05)
                    except BaseException:
                        pass
    """
    agent = start_agent(source)
    assert agent.wait_loaded()[0] == 200

    def post() -> None:
        with contextlib.suppress(Exception):  # the server goes away mid-call
            agent.post(batch(turn()))

    threading.Thread(target=post, daemon=True).start()
    time.sleep(0.5)  # the batch is being answered
    started = time.monotonic()
    agent.process.terminate()
    assert agent.process.wait(10) == 128 + 15
    assert time.monotonic() - started < 5


THREAD_NAMES = """
    import threading

    class Agent:
        def __init__(self, search_pipeline): pass
        def get_batch_size(self): return 1
        def batch_generate_response(self, queries, images, message_histories):
            return [threading.current_thread().name + " " + queries[0]]
"""


def keep_alive_post(conn: UnixHTTPConnection, body: dict) -> tuple[int, dict]:
    conn.request("POST", "/batch", body=json.dumps(body).encode())
    response = conn.getresponse()
    return response.status, json.loads(response.read())


def test_the_main_thread_keeps_a_connection_and_gives_it_up_for_another(start_agent):
    """A connection's batches are answered on the main thread, the first handed over by the
    connection's server thread, the next read by the main thread itself; a batch on another
    connection is answered at once all the same, and the first connection goes on working."""
    agent = start_agent(THREAD_NAMES)
    assert agent.wait_loaded()[0] == 200
    first, second = UnixHTTPConnection(agent.socket), UnixHTTPConnection(agent.socket)
    try:
        for i in range(3):
            status, body = keep_alive_post(first, batch(turn(f"a{i}"), batch_id=f"a{i}"))
            assert (status, body["responses"]) == (200, [f"MainThread a{i}"])
        started = time.monotonic()  # the main thread waits on the first connection meanwhile
        status, body = keep_alive_post(second, batch(turn("b"), batch_id="b"))
        assert (status, body["responses"]) == (200, ["MainThread b"])
        assert time.monotonic() - started < 2
        for name, conn in (("a3", first), ("b2", second), ("a4", first)):
            status, body = keep_alive_post(conn, batch(turn(name), batch_id=name))
            assert (status, body["responses"]) == (200, [f"MainThread {name}"])
        first.request("GET", "/ready")
        assert first.getresponse().status == 200
        first.sock.close()  # the client goes away between requests
        assert agent.post(batch(turn("c"), batch_id="c"))[1]["responses"] == ["MainThread c"]
    finally:
        first.close()
        second.close()


def test_two_requests_sent_at_once_on_a_kept_connection_are_both_answered(start_agent):
    agent = start_agent(THREAD_NAMES)
    assert agent.wait_loaded()[0] == 200
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(10)
        sock.connect(str(agent.socket))

        def request(batch_id: str) -> bytes:
            data = json.dumps(batch(turn(batch_id), batch_id=batch_id)).encode()
            head = f"POST /batch HTTP/1.1\r\nHost: a\r\nContent-Length: {len(data)}\r\n\r\n"
            return head.encode() + data

        sock.sendall(request("p1"))
        assert _received(sock, 1).count(b"MainThread p1") == 1  # the main thread holds it now
        sock.sendall(request("p2") + request("p3"))  # both arrive in one read
        replies = _received(sock, 2)
        assert replies.index(b"MainThread p2") < replies.index(b"MainThread p3")


def _received(sock: socket.socket, responses: int) -> bytes:
    """Read until ``responses`` whole 200 responses have come."""
    data = b""
    while data.count(b"HTTP/1.1 200") < responses or not data.endswith(b"}"):
        chunk = sock.recv(65536)
        assert chunk, f"the connection closed after {data!r}"
        data += chunk
    return data


def test_request_heads_are_read_as_the_standard_library_reads_them(start_agent):
    """agentkit parses a plain head read in whole itself (for speed) and leaves any other to
    ``http.server``: both ways agree on what a request says and how its connection goes on."""
    agent = start_agent(THREAD_NAMES)
    assert agent.wait_loaded()[0] == 200
    data = json.dumps(batch(turn("q"), batch_id="q")).encode()
    length = f"{len(data)}".encode()

    def exchange(*writes: bytes) -> bytes:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(10)
            sock.connect(str(agent.socket))
            for write in writes:
                sock.sendall(write)
                time.sleep(0.05)
            sock.shutdown(socket.SHUT_WR)
            return b"".join(iter(lambda: sock.recv(65536), b""))

    plain = b"POST /batch HTTP/1.1\r\ncontent-LENGTH:  " + length + b" \r\nHost: a\r\n\r\n"
    assert exchange(plain + data).startswith(b"HTTP/1.1 200 OK\r\n")
    split = (b"POST /batch HTTP/1.1\r\nHost: a\r\nContent-", b"Length: " + length + b"\r\n\r\n")
    assert exchange(split[0], split[1] + data).startswith(b"HTTP/1.1 200 OK\r\n")
    folded = b"POST /batch HTTP/1.1\r\nX-Note: a\r\n  b\r\nContent-Length: " + length + b"\r\n\r\n"
    assert b"MainThread q" in exchange(folded + data)
    old = exchange(b"POST /batch HTTP/1.0\r\nContent-Length: " + length + b"\r\n\r\n" + data)
    assert old.startswith(b"HTTP/1.1 200") and b"Connection: close\r\n" in old
    closing = b"POST /batch HTTP/1.1\r\nConnection: close\r\nContent-Length: " + length
    assert b"Connection: close\r\n" in exchange(closing + b"\r\n\r\n" + data)
    expecting = b"POST /batch HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: " + length
    answer = exchange(expecting + b"\r\n\r\n", data)
    assert answer.startswith(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n")
    crowded = b"GET /ready HTTP/1.1\r\n" + b"X-A: 1\r\n" * 101 + b"\r\n"
    assert exchange(crowded).startswith(b"HTTP/1.1 431")
    assert b"Error code: 505" in exchange(b"GET /ready HTTP/2.0\r\n\r\n")
    assert exchange(b"GET //ready HTTP/1.1\r\n\r\n").startswith(b"HTTP/1.1 200 OK\r\n")
    assert exchange(b"GET /nothing HTTP/1.1\r\n\r\n").startswith(b"HTTP/1.1 404")
