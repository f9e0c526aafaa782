"""agentkit's SearchPipeline against a small stub search service on a real Unix socket."""

from __future__ import annotations

import base64
import io

import pytest
from PIL import Image

from agentkit.image_open import open_image
from agentkit.search import SearchError, SearchPipeline, SearchUnavailable
from tests.agentkit.conftest import IMAGE_RESULT, WEB_RESULT, StubSearch, jpeg_bytes


def _sent_image(server: StubSearch) -> bytes:
    path, body = server.requests[-1]
    assert path == "/search/image"
    return base64.b64decode(body["image_b64"])


def test_image_search_sends_the_original_bytes_of_an_undecoded_image(stub):
    server = stub()
    search = SearchPipeline(server.server_address, task="multi-source-augmentation")
    source = jpeg_bytes((96, 64))
    image = open_image(source)
    assert search(image, k=2) == [IMAGE_RESULT, IMAGE_RESULT]
    assert _sent_image(server) == source
    assert server.requests[-1][1]["k"] == 2
    assert search(image) == [IMAGE_RESULT] * 5  # the official default k


def test_a_decoded_or_new_image_is_sent_losslessly(stub, monkeypatch):
    server = stub()
    search = SearchPipeline(server.server_address)
    image = open_image(jpeg_bytes((20, 10), "blue"))
    image.load()
    image.putpixel((0, 0), (1, 2, 3))
    search(image)
    sent = Image.open(io.BytesIO(_sent_image(server)))
    assert sent.format == "BMP"
    assert sent.convert("RGB").tobytes() == image.tobytes()
    translucent = Image.new("LA", (5, 3), (90, 40))
    search(translucent)
    sent = Image.open(io.BytesIO(_sent_image(server)))
    assert (sent.format, sent.mode, sent.tobytes()) == ("PNG", "LA", translucent.tobytes())
    search(Image.new("CMYK", (4, 4)))
    assert Image.open(io.BytesIO(_sent_image(server))).mode == "RGB"
    monkeypatch.setattr("agentkit.search.MAX_BMP_BYTES", 100)
    search(image)
    sent = Image.open(io.BytesIO(_sent_image(server)))
    assert sent.format == "PNG"
    assert sent.convert("RGB").tobytes() == image.tobytes()


def test_an_image_file_path_is_an_image_search(stub, tmp_path):
    server = stub()
    path = tmp_path / "photo.jpg"
    path.write_bytes(jpeg_bytes())
    assert SearchPipeline(server.server_address)(str(path), k=1) == [IMAGE_RESULT]
    assert _sent_image(server) == path.read_bytes()


def test_text_is_a_web_search_and_fewer_than_k_may_come_back(stub):
    server = stub()
    search = SearchPipeline(server.server_address, task="multi-turn-qa")
    assert search.web_search is True
    assert search("Ford Model T price", k=5) == [WEB_RESULT, WEB_RESULT]
    assert server.requests[-1] == ("/search/web", {"query": "Ford Model T price", "k": 5})


def test_task_1_refuses_text_queries_with_value_error(stub):
    server = stub("single-source-augmentation")
    search = SearchPipeline(server.server_address, task="single-source-augmentation")
    assert search.web_search is False
    with pytest.raises(ValueError, match="web search is not available in this task"):
        search("Ford Model T price")


def test_inputs_the_pipeline_cannot_search_raise_value_error(stub):
    server = stub()
    search = SearchPipeline(server.server_address)
    with pytest.raises(ValueError, match="cannot search with a list"):
        search([0.1, 0.2])
    for k in (0, -1, True, 2.5):
        with pytest.raises(ValueError, match="k must be a positive integer"):
            search("text", k=k)
    assert server.requests == []


def test_an_image_url_is_sent_for_the_service_to_resolve_in_the_corpus(stub):
    server = stub()
    SearchPipeline(server.server_address)("https://example.org/car.jpg", k=3)
    assert server.requests == [
        ("/search/image", {"image_url": "https://example.org/car.jpg", "k": 3})
    ]


def test_service_failures_and_absence_raise_clear_errors(stub, tmp_path):
    server = stub()
    server.fail_with = 500
    with pytest.raises(SearchError, match=r"index not loaded \(HTTP 500\)"):
        SearchPipeline(server.server_address)("text")
    missing = tmp_path / "no-such.sock"
    with pytest.raises(SearchUnavailable, match=f"search service at {missing} cannot be reached"):
        SearchPipeline(str(missing))(Image.new("RGB", (2, 2)))


def test_socket_path_defaults_to_the_socket_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("PODIUM_SOCKET_DIR", str(tmp_path))
    monkeypatch.setenv("PODIUM_TASK", "single-source-augmentation")
    search = SearchPipeline()
    assert search.socket_path == str(tmp_path / "search.sock")
    assert search.web_search is False
    monkeypatch.delenv("PODIUM_SOCKET_DIR")
    assert SearchPipeline().socket_path == "/podium/sock/search.sock"
