"""The search client agents use, shaped like the official ``cragmm_search`` pipeline.

``search_pipeline(image_or_text, k=5)`` returns a list of result dicts, as
``UnifiedSearchPipeline`` does:

- a PIL image, or a ``str`` naming an existing image file -> image search
  (``index``, ``score``, ``url``, ``entities``);
- any other ``str`` -> web search (``index``, ``score``, ``page_name``, ``page_snippet``,
  ``page_url``). Where the task has no web search (Task 1) the service refuses it and this raises
  ``ValueError``, as the official pipeline does.

The official pipeline downloads a ``str`` starting with ``http`` as an image; an agent has no
network in Podium, so such a string raises ``ValueError`` instead. Image embeddings
(``numpy`` arrays) are not accepted either: pass the image.

Requests go to Podium's search service over ``search.sock`` (HTTP/1.1 + JSON).
"""

from __future__ import annotations

import base64
import http.client
import io
import json
import os
import socket
from typing import Any

from PIL import Image

from agentkit.protocol import (
    CANDIDATE_SEARCH_PATH,
    ENV_SOCKET_DIR,
    ENV_TASK,
    IMAGE_SEARCH_PATH,
    SEARCH_SOCKET,
    WEB_SEARCH_PATH,
)

SOURCE_BYTES_ATTR = "_podium_source_bytes"  # the encoded source (bytes(...)), set by open_image
IMAGE_ONLY_TASKS = ("single-source-augmentation",)
MAX_RESPONSE_BYTES = 64 * 1024 * 1024
BMP_MODES = ("1", "L", "RGB")  # BMP keeps these exactly
PNG_MODES = ("LA", "I", "I;16", "P", "RGBA")  # PNG keeps these (alpha, palettes, 16 bits)
MAX_BMP_BYTES = 16 * 1024 * 1024  # larger decoded images go as PNG, to stay well under limits


class SearchUnavailable(ConnectionError):
    """Podium's search service cannot be reached (no socket, refused, or it went away)."""


class SearchError(RuntimeError):
    """The search service failed on a valid request, or answered outside the protocol."""


class _UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, socket_path: str, timeout: float) -> None:
        super().__init__("search", timeout=timeout)
        self.socket_path = socket_path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        try:
            sock.connect(self.socket_path)
        except OSError:
            sock.close()
            raise
        self.sock = sock


def default_socket_path() -> str:
    """``search.sock`` in ``$PODIUM_SOCKET_DIR`` if set, else the protocol's path."""
    directory = os.environ.get(ENV_SOCKET_DIR)
    return os.path.join(directory, os.path.basename(SEARCH_SOCKET)) if directory else SEARCH_SOCKET


class SearchPipeline:
    """Drop-in for ``cragmm_search.search.UnifiedSearchPipeline`` inside a Podium container.

    ``web_search`` tells whether the task offers web search (as the official attribute does);
    the service has the final word.
    """

    def __init__(
        self, socket_path: str | None = None, task: str | None = None, timeout_s: float = 60.0
    ) -> None:
        self.socket_path = socket_path or default_socket_path()
        self.task = task if task is not None else os.environ.get(ENV_TASK)
        self.web_search = self.task not in IMAGE_ONLY_TASKS
        self.timeout_s = timeout_s

    def __call__(self, image_or_text: Any, k: int = 5) -> list[dict[str, Any]]:
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ValueError(f"k must be a positive integer, got {k!r}")
        if isinstance(image_or_text, Image.Image):
            return self._post(IMAGE_SEARCH_PATH, {"image_b64": encode_image(image_or_text), "k": k})
        if isinstance(image_or_text, str):
            if os.path.isfile(image_or_text):
                with open(image_or_text, "rb") as f:
                    data = f.read()
                payload = {"image_b64": base64.b64encode(data).decode("ascii"), "k": k}
                return self._post(IMAGE_SEARCH_PATH, payload)
            if image_or_text.startswith("http"):  # the corpus' own image URLs resolve
                return self._post(IMAGE_SEARCH_PATH, {"image_url": image_or_text, "k": k})
            return self._post(WEB_SEARCH_PATH, {"query": image_or_text, "k": k})
        raise ValueError(
            f"cannot search with a {type(image_or_text).__name__}: pass a PIL image, "
            "an image file path, or a text query (image embeddings are not supported)"
        )

    def search_candidates(
        self, item: Any, query: str | Image.Image, k: int = 10
    ) -> list[dict[str, Any]]:
        """Visual-RAG: rank ``item``'s candidate images (a ``VisualRAGItem`` of the batch being
        answered, or its ``item_id``) for ``query``, a text or an example image; the best ``k``
        as ``[{"id": image id, "score": cosine}]``, best first. Only in the settings that give
        candidates (retrieval, top-k), when the task enables image search."""
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ValueError(f"k must be a positive integer, got {k!r}")
        item_id = item if isinstance(item, str) else getattr(item, "item_id", None)
        if not isinstance(item_id, str):
            raise ValueError(f"item must be a VisualRAGItem or its item_id, got {item!r}")
        payload: dict[str, Any] = {"item_id": item_id, "k": k}
        if isinstance(query, Image.Image):
            payload["image_b64"] = encode_image(query)
        elif isinstance(query, str):
            payload["query"] = query
        else:
            raise ValueError(f"query must be a text or a PIL image, got {type(query).__name__}")
        return self._post(CANDIDATE_SEARCH_PATH, payload)

    def _post(self, path: str, payload: dict[str, Any]) -> list[dict[str, Any]]:
        connection = _UnixHTTPConnection(self.socket_path, self.timeout_s)
        try:
            body = json.dumps(payload).encode()
            connection.request("POST", path, body, {"Content-Type": "application/json"})
            response = connection.getresponse()
            raw = response.read(MAX_RESPONSE_BYTES + 1)
        except (OSError, http.client.HTTPException) as exc:
            raise SearchUnavailable(
                f"Podium's search service at {self.socket_path} cannot be reached "
                f"({type(exc).__name__}: {exc}); this task may not offer search"
            ) from None
        finally:
            connection.close()
        if len(raw) > MAX_RESPONSE_BYTES:
            raise SearchError(f"{path}: response larger than {MAX_RESPONSE_BYTES} bytes")
        try:
            answer = json.loads(raw)
        except ValueError:
            raise SearchError(f"{path}: HTTP {response.status} answer is not JSON") from None
        message = answer.get("error") if isinstance(answer, dict) else None
        if 400 <= response.status < 500:
            raise ValueError(message or f"{path}: request refused (HTTP {response.status})")
        if response.status != 200:
            raise SearchError(f"{path}: {message or 'search failed'} (HTTP {response.status})")
        results = answer.get("results") if isinstance(answer, dict) else None
        if not isinstance(results, list):
            raise SearchError(f"{path}: the answer has no 'results' list")
        return results


def encode_image(image: Image.Image) -> str:
    """Base64 of the image, always lossless.

    An image still undecoded since agentkit opened it cannot have been modified, so its original
    bytes go as they are. Otherwise the pixels are written as BMP (uncompressed: ~40x faster
    than PNG, and the socket is local), or as PNG for modes BMP cannot keep (alpha, palettes)
    and for images over 16 MiB of pixels.
    """
    source = getattr(image, SOURCE_BYTES_ATTR, None)
    if source is not None and getattr(image, "tile", None):
        return base64.b64encode(bytes(source)).decode("ascii")
    if image.mode not in BMP_MODES + PNG_MODES:  # CMYK, YCbCr, LAB, HSV, F...
        image = image.convert("RGBA" if "A" in image.getbands() else "RGB")
    buffer = io.BytesIO()
    raw_bytes = image.width * image.height * len(image.getbands())
    if image.mode in BMP_MODES and raw_bytes <= MAX_BMP_BYTES:
        image.save(buffer, format="BMP")
    else:
        image.save(buffer, format="PNG", compress_level=1)
    return base64.b64encode(buffer.getvalue()).decode("ascii")
