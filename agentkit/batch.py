"""Reading a ``POST /batch`` body into turns the agent can be called with.

Every field is checked; a bad one raises :class:`BadRequest` naming it (``turns[2].query: ...``).
A turn's image comes as a file (``image_path``, what Podium sends) or inline (``image_b64``).
Images are opened lazily: a JPEG's header is read the first time the agent uses the image
(``agentkit.lazy_image``; a broken one raises ``PIL.UnidentifiedImageError`` then), other formats'
headers at once, and the pixels only when decoded, so an agent never pays for what it does not
look at. A file is mapped, not read (``agentkit.image_files``:
no descriptor kept open); :meth:`BatchRequest.release`, once the batch is answered, copies what
the agent still holds into memory, so it never holds the files the runner removes after the
batch.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
from dataclasses import dataclass, field
from typing import Any

from PIL import Image

from agentkit.image_files import BatchFiles
from agentkit.image_open import BadRequest, open_image_file, open_image_source, value_kind
from agentkit.items import Item, ItemError, parse_items
from agentkit.protocol import MAX_BATCH_SIZE

ROLES = ("user", "assistant")


@dataclass(frozen=True)
class TurnRequest:
    session_id: str
    interaction_id: str
    turn_idx: int
    query: str
    image: Image.Image | None
    message_history: list[dict[str, str]]
    rag_context: str | None
    domain: str | None


@dataclass(frozen=True)
class BatchRequest:
    batch_id: str | int
    deadline_s: float | None
    turns: list[TurnRequest]  # CRAG-MM (no "protocol" in the body)
    protocol: str | None = None  # another benchmark's name: the batch holds ``items``
    items: list[Item] = field(default_factory=list)
    files: BatchFiles = field(default_factory=BatchFiles, compare=False, repr=False)

    def release(self) -> int:
        """Once answered: drop the batch's turns and items, and copy the image files the agent
        still holds into memory (their mappings would keep removed files' space); how many."""
        self.turns.clear()
        self.items.clear()
        return self.files.release()


def parse_batch(body: bytes) -> BatchRequest:
    """Parse and check a ``/batch`` body. Raises :class:`BadRequest`."""
    try:
        data = json.loads(body)
    except UnicodeDecodeError as exc:
        raise BadRequest(f"body is not UTF-8: {exc}") from None
    except json.JSONDecodeError as exc:
        raise BadRequest(f"body is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise BadRequest(f"body must be a JSON object, got {value_kind(data)}")
    batch_id = data.get("batch_id")
    if isinstance(batch_id, bool) or not isinstance(batch_id, str | int):
        raise BadRequest(f"batch_id must be a string or an integer, got {value_kind(batch_id)}")
    deadline_s = data.get("deadline_s")
    if deadline_s is not None and (
        isinstance(deadline_s, bool)
        or not isinstance(deadline_s, int | float)
        or not math.isfinite(deadline_s)
        or deadline_s <= 0
    ):
        raise BadRequest(f"deadline_s must be a positive number or null, got {deadline_s!r}")
    deadline = None if deadline_s is None else float(deadline_s)
    key = "turns" if data.get("protocol") is None else "items"
    entries = data.get(key)
    if not isinstance(entries, list) or not entries:
        raise BadRequest(f"{key} must be a non-empty list, got {value_kind(entries)}")
    if len(entries) > MAX_BATCH_SIZE:
        raise BadRequest(f"{key} holds {len(entries)} {key}, more than {MAX_BATCH_SIZE}")
    files = BatchFiles()
    try:
        if key == "items":
            try:
                items = parse_items(data["protocol"], entries, files)
            except ItemError as exc:
                raise BadRequest(str(exc)) from None
            return BatchRequest(batch_id, deadline, [], data["protocol"], items, files)
        turns = [_parse_turn(turn, f"turns[{i}]", files) for i, turn in enumerate(entries)]
        return BatchRequest(batch_id, deadline, turns, files=files)
    except BadRequest:
        files.release()  # the files opened before the bad field
        raise


def _parse_turn(turn: Any, where: str, files: BatchFiles) -> TurnRequest:
    if not isinstance(turn, dict):
        raise BadRequest(f"{where} must be an object, got {value_kind(turn)}")
    turn_idx = turn.get("turn_idx")
    if isinstance(turn_idx, bool) or not isinstance(turn_idx, int) or turn_idx < 0:
        raise BadRequest(f"{where}.turn_idx must be a non-negative integer, got {turn_idx!r}")
    return TurnRequest(
        session_id=_string(turn, "session_id", where),
        interaction_id=_string(turn, "interaction_id", where),
        turn_idx=turn_idx,
        query=_string(turn, "query", where),
        image=_image(turn, where, files),
        message_history=_history(turn.get("message_history", []), f"{where}.message_history"),
        rag_context=_string(turn, "rag_context", where, optional=True),
        domain=_string(turn, "domain", where, optional=True),
    )


def _string(obj: dict[str, Any], key: str, where: str, optional: bool = False) -> Any:
    value = obj.get(key)
    if value is None and optional:
        return None
    if not isinstance(value, str):
        expected = "a string or null" if optional else "a string"
        raise BadRequest(f"{where}.{key} must be {expected}, got {value_kind(value)}")
    return value


def _image(turn: dict[str, Any], where: str, files: BatchFiles) -> Image.Image | None:
    path, inline = turn.get("image_path"), turn.get("image_b64")
    if path is not None and inline is not None:
        raise BadRequest(f"{where} has both image_path and image_b64: send one of them")
    if path is not None:
        return open_image_file(path, f"{where}.image_path", files)
    if inline is not None:
        return open_image_source(_decode_b64(inline, f"{where}.image_b64"), f"{where}.image_b64")
    return None


def _decode_b64(value: Any, where: str) -> bytes:
    if not isinstance(value, str):
        raise BadRequest(f"{where} must be a base64 string or null, got {value_kind(value)}")
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise BadRequest(f"{where} is not valid base64: {exc}") from None


def _history(value: Any, where: str) -> list[dict[str, str]]:
    if not isinstance(value, list):
        raise BadRequest(f"{where} must be a list, got {value_kind(value)}")
    history = []
    for i, message in enumerate(value):
        if not isinstance(message, dict) or set(message) != {"role", "content"}:
            raise BadRequest(f"{where}[{i}] must be an object with exactly 'role' and 'content'")
        if message["role"] not in ROLES:
            raise BadRequest(f"{where}[{i}].role must be one of {ROLES}, got {message['role']!r}")
        if not isinstance(message["content"], str):
            raise BadRequest(f"{where}[{i}].content must be a string")
        history.append({"role": message["role"], "content": message["content"]})
    return history
