"""Loading, validating and writing splits in Podium's split format (``docs/split-format.md``).

A split is a directory holding ``sessions.jsonl`` (one conversation per line) and ``images/``.
``loading.load_split`` reads this format or the Hugging Face layout of the public CRAG-MM data
(``hf.py``, which converts it to this format).
Every problem is reported as an ``EvaluatorError`` naming the file, line and field.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from pathlib import Path, PurePosixPath
from typing import Any

from PIL import Image, UnidentifiedImageError

from evaluator.benchmarks.crag_mm.records import STANDARD_LABELS, Conversation, Split, Turn
from evaluator.jsonl import numbered_lines, parse_line
from evaluator.records import EvaluatorError
from evaluator.staging import staged_directory

SESSIONS_FILE = "sessions.jsonl"
IMAGES_DIR = "images"

CONVERSATION_FIELDS = ("session_id", "image", "image_url", "turns", "answers")
TURN_FIELDS = ("interaction_id", "query")
ANSWER_FIELDS = ("interaction_id", "ans_full")
# Names an extra turn field may not take: they are columns of the per-turn output table.
RESERVED_LABELS = frozenset(
    {
        "session_id",
        "turn_idx",
        "is_ego",
        "ground_truth",
        "ans_full",
        "agent_response",
        "response",
        "is_exact_match",
        "is_correct",
        "is_miss",
        "verdict",
        "judge_id",
        "prompt_version",
        "prompt_hash",
    }
)
LABEL_NAME = re.compile(r"[a-z][a-z0-9_]{0,63}")


def read_split(root: Path) -> Split:
    """A split directory in Podium's format (``sessions.jsonl`` and ``images/``)."""
    sessions = root / SESSIONS_FILE
    conversations: list[Conversation] = []
    ids = UniqueIds()
    checked_images: set[str] = set()
    for line_no, line in numbered_lines(sessions):
        where = f"{sessions}:{line_no}"
        record = parse_line(line, where)
        conversation = parse_conversation(record, where)
        ids.add(conversation, where)
        if conversation.image is not None and conversation.image not in checked_images:
            _check_image_file(root, conversation.image, where)
            checked_images.add(conversation.image)
        conversations.append(conversation)
    if not conversations:
        raise EvaluatorError(f"{sessions}: no conversations")
    return Split(root=root, conversations=conversations)


def _check_image_file(root: Path, image: str, where: str) -> None:
    file = root / image
    if not file.is_file():
        raise EvaluatorError(f"{where}: field 'image': file {file} does not exist")
    try:
        with Image.open(file) as opened:
            opened.size  # noqa: B018 - reading the header is the check
    except (UnidentifiedImageError, OSError) as exc:
        raise EvaluatorError(f"{where}: field 'image': {file} is not a readable image") from exc


class UniqueIds:
    """Remembers where each session_id and interaction_id was first seen, to report duplicates."""

    def __init__(self) -> None:
        self._sessions: dict[str, str] = {}
        self._interactions: dict[str, str] = {}

    def add(self, conversation: Conversation, where: str) -> None:
        _claim(self._sessions, conversation.session_id, "session_id", where)
        for index, turn in enumerate(conversation.turns):
            field = f"turns[{index}].interaction_id"
            _claim(self._interactions, turn.interaction_id, field, where)


def _claim(seen: dict[str, str], key: str, field: str, where: str) -> None:
    if key in seen:
        raise EvaluatorError(f"{where}: field '{field}': duplicate {key!r} (first at {seen[key]})")
    seen[key] = where


def parse_conversation(record: Any, where: str) -> Conversation:
    """Validate one ``sessions.jsonl`` record and build the ``Conversation``."""
    if not isinstance(record, dict):
        raise EvaluatorError(f"{where}: expected a JSON object, got {_kind(record)}")
    unknown = sorted(set(record) - set(CONVERSATION_FIELDS))
    if unknown:
        raise EvaluatorError(f"{where}: unknown field(s) {', '.join(unknown)}")
    session_id = _text(record, "session_id", where)
    image = _optional_text(record, "image", where)
    image_url = _optional_text(record, "image_url", where) or None
    if image is not None:
        _check_image_path(image, where)
    elif image_url is None:
        raise EvaluatorError(f"{where}: fields 'image' and 'image_url' are both empty")
    turns = _list(record, "turns", where)
    answers = _answers(_list(record, "answers", where), where)
    parsed = tuple(_turn(turn, index, answers, where) for index, turn in enumerate(turns))
    extra = sorted(set(answers) - {turn.interaction_id for turn in parsed})
    if extra:
        raise EvaluatorError(f"{where}: field 'answers': no turn has interaction_id {extra[0]!r}")
    return Conversation(session_id=session_id, image=image, image_url=image_url, turns=parsed)


def _turn(record: Any, index: int, answers: dict[str, str], where: str) -> Turn:
    field = f"turns[{index}]"
    if not isinstance(record, dict):
        raise EvaluatorError(f"{where}: field '{field}': expected an object, got {_kind(record)}")
    interaction_id = _text(record, "interaction_id", where, field)
    query = _text(record, "query", where, field)
    for name in STANDARD_LABELS:
        if name not in record:
            raise EvaluatorError(f"{where}: field '{field}.{name}' is missing")
    labels = {}
    for name in record:
        if name in TURN_FIELDS:
            continue
        if name in RESERVED_LABELS or not LABEL_NAME.fullmatch(name):
            raise EvaluatorError(
                f"{where}: field '{field}.{name}': not allowed as a label name "
                "(labels are lower-case snake_case and may not reuse output column names)"
            )
        labels[name] = _text(record, name, where, field)
    if interaction_id not in answers:
        raise EvaluatorError(
            f"{where}: field 'answers': no answer for interaction_id {interaction_id!r}"
        )
    return Turn(interaction_id, query, answers[interaction_id], labels)


def _answers(records: list[Any], where: str) -> dict[str, str]:
    answers: dict[str, str] = {}
    for index, record in enumerate(records):
        field = f"answers[{index}]"
        if not isinstance(record, dict):
            raise EvaluatorError(
                f"{where}: field '{field}': expected an object, got {_kind(record)}"
            )
        unknown = sorted(set(record) - set(ANSWER_FIELDS))
        if unknown:
            raise EvaluatorError(f"{where}: field '{field}': unknown field(s) {', '.join(unknown)}")
        interaction_id = _text(record, "interaction_id", where, field)
        if interaction_id in answers:
            raise EvaluatorError(
                f"{where}: field '{field}.interaction_id': second answer for {interaction_id!r}"
            )
        if not isinstance(record.get("ans_full"), str):
            raise EvaluatorError(
                f"{where}: field '{field}.ans_full': expected a string, "
                f"got {_kind(record.get('ans_full'))}"
            )
        answers[interaction_id] = record["ans_full"]
    return answers


def _check_image_path(image: str, where: str) -> None:
    path = PurePosixPath(image)
    if path.is_absolute() or "\\" in image or ".." in path.parts or path.parts[:1] != (IMAGES_DIR,):
        raise EvaluatorError(
            f"{where}: field 'image': {image!r} must be a relative path under {IMAGES_DIR}/"
        )
    if len(path.parts) < 2:
        raise EvaluatorError(f"{where}: field 'image': {image!r} names no file")


def _text(record: dict[str, Any], name: str, where: str, parent: str = "") -> str:
    field = f"{parent}.{name}" if parent else name
    if name not in record:
        raise EvaluatorError(f"{where}: field '{field}' is missing")
    value = record[name]
    if not isinstance(value, str):
        raise EvaluatorError(f"{where}: field '{field}': expected a string, got {_kind(value)}")
    if not value.strip():
        raise EvaluatorError(f"{where}: field '{field}' is empty")
    return value


def _optional_text(record: dict[str, Any], name: str, where: str) -> str | None:
    if name not in record:
        raise EvaluatorError(f"{where}: field '{name}' is missing (use null when absent)")
    value = record[name]
    if value is not None and not isinstance(value, str):
        raise EvaluatorError(
            f"{where}: field '{name}': expected a string or null, got {_kind(value)}"
        )
    return value


def _list(record: dict[str, Any], name: str, where: str) -> list[Any]:
    if name not in record:
        raise EvaluatorError(f"{where}: field '{name}' is missing")
    value = record[name]
    if not isinstance(value, list):
        raise EvaluatorError(f"{where}: field '{name}': expected a list, got {_kind(value)}")
    if not value:
        raise EvaluatorError(f"{where}: field '{name}' is empty")
    return value


def _kind(value: Any) -> str:
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}
    if value is None:
        return "null"
    return names.get(type(value), type(value).__name__)


def conversation_record(conversation: Conversation) -> dict[str, Any]:
    """The ``sessions.jsonl`` record of a conversation (standard labels first)."""
    turns = []
    for turn in conversation.turns:
        labels = {name: turn.labels[name] for name in STANDARD_LABELS if name in turn.labels}
        labels.update(turn.labels)
        turns.append({"interaction_id": turn.interaction_id, "query": turn.query, **labels})
    return {
        "session_id": conversation.session_id,
        "image": conversation.image,
        "image_url": conversation.image_url,
        "turns": turns,
        "answers": [
            {"interaction_id": turn.interaction_id, "ans_full": turn.ground_truth}
            for turn in conversation.turns
        ],
    }


def write_split(
    conversations: Iterable[tuple[Conversation, bytes | None]], out_dir: str | Path
) -> Split:
    """Write a split directory from conversations and their image bytes, then load it back.

    ``conversation.image`` is where the bytes go (``images/<file>``); ``None`` bytes mean no
    image file. ``out_dir`` must not exist or be empty. The directory is built next to
    ``out_dir`` and renamed into place, so a failure leaves nothing half-written.
    """
    written: dict[str, str] = {}
    with staged_directory(out_dir) as staging:
        (staging / IMAGES_DIR).mkdir()
        with (staging / SESSIONS_FILE).open("w", encoding="utf-8") as sessions:
            for conversation, image_bytes in conversations:
                _write_image(staging, conversation, image_bytes, written)
                record = conversation_record(conversation)
                sessions.write(json.dumps(record, ensure_ascii=False) + "\n")
        split = read_split(staging)
    return Split(root=Path(out_dir), conversations=split.conversations)


def _write_image(
    root: Path, conversation: Conversation, image_bytes: bytes | None, written: dict[str, str]
) -> None:
    where = f"conversation {conversation.session_id!r}"
    if conversation.image is None:
        if image_bytes is not None:
            raise EvaluatorError(f"{where}: image bytes given but no image path")
        return
    _check_image_path(conversation.image, where)
    if image_bytes is None:
        raise EvaluatorError(f"{where}: image path {conversation.image!r} given without bytes")
    digest = hashlib.sha256(image_bytes).hexdigest()
    previous = written.get(conversation.image)
    if previous is not None and previous != digest:
        raise EvaluatorError(f"{where}: two different images written to {conversation.image!r}")
    if previous is None:
        target = root / conversation.image
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(image_bytes)
        written[conversation.image] = digest
