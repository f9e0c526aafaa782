"""The official evaluation's own corrections to the released CRAG-MM data.

The official kit's evaluation constants leave two sessions out of both the single-turn and the
multi-turn data (``SESSIONS_TO_SKIP``) and give one single-turn session an archived copy of its
image's URL (``SESSIONS_TO_UPDATE``), the original being gone. Podium's Hugging Face converter
applies the same corrections, so a split converted from the hub holds what the official
evaluation scores, and it reports each one (:class:`DataFixes`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

SKIPPED_SESSIONS = frozenset(
    {"04d98259-27af-41b1-a7be-5798fd1b8e95", "695b4b5c-7c65-4f7b-8968-50fe10482a16"}
)
# single-turn only, as in the official constants
IMAGE_URL_UPDATES = {
    "0df99a9a-6a5d-4ff4-b8e4-e3ee90209dfe": (
        "https://web.archive.org/web/20250521025904/https://upload.wikimedia.org/wikipedia/"
        "commons/1/13/BMW_5_SERIES_LWB_SEDAN_(G30)_China_(82).jpg"
    )
}


@dataclass
class DataFixes:
    """What the conversion changed, for the organiser to read."""

    skipped: list[str] = field(default_factory=list)  # session ids left out
    updated: list[str] = field(default_factory=list)  # session ids given the official image URL

    def apply(self, record: dict[str, Any]) -> dict[str, Any] | None:
        """``record`` (a conversation as the converter reads it) as the official evaluation
        uses it; None when it leaves the session out."""
        session_id = record.get("session_id")
        if session_id in SKIPPED_SESSIONS:
            self.skipped.append(str(session_id))
            return None
        url = IMAGE_URL_UPDATES.get(str(session_id))
        if url is not None and len(record.get("turns") or ()) == 1 and record.get("image_url"):
            self.updated.append(str(session_id))
            return {**record, "image_url": url}
        return record

    def describe(self) -> list[str]:
        """One line per correction, in the official code's words for it."""
        return [f"left out session {s} (the official SESSIONS_TO_SKIP)" for s in self.skipped] + [
            f"session {s}: image_url replaced by the official archived copy (SESSIONS_TO_UPDATE)"
            for s in self.updated
        ]
