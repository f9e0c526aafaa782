"""The judge endpoints Podium may call (``PODIUM_JUDGE_ENDPOINTS``), read and checked at start-up.

Each entry, by name: ``base_url`` (an OpenAI-compatible ``.../v1``), ``model`` (what it serves;
a task may name another), ``api_key_env`` (the variable holding its key: an endpoint gets no key
of another's) and ``concurrency`` (requests in flight to it from all judge processes together,
``workers.judge_slots``; ``PODIUM_JUDGE_CONCURRENCY`` when left out). ``PODIUM_JUDGE_BASE_URL``
and its companions make the entry ``default``. A task names an entry for its prompts
(``Task.judge_endpoint``) and, when some prompts carry images (M2RAG), one whose model sees
them (``Task.vision_judge_endpoint``).
"""

from __future__ import annotations

import json
from typing import Any

from django.core.exceptions import ImproperlyConfigured

VARIABLE = "PODIUM_JUDGE_ENDPOINTS"
SHAPE = '{"name": {"base_url": str, "model": str, "api_key_env": str, "concurrency": int}}'
_TEXT_FIELDS = ("base_url", "model", "api_key_env")


def endpoint_entry(name: str, raw: Any, concurrency: int) -> dict[str, Any]:
    """One checked entry with its defaults filled in; ``ImproperlyConfigured`` naming the entry
    and the field that is wrong."""
    where = f"{VARIABLE}[{name!r}]"
    if not isinstance(raw, dict):
        raise ImproperlyConfigured(f"{where} must be an object: {SHAPE}")
    unknown = sorted(set(raw) - {*_TEXT_FIELDS, "concurrency"})
    if unknown:
        raise ImproperlyConfigured(f"{where} has unknown fields {unknown}: {SHAPE}")
    entry: dict[str, Any] = {field: raw.get(field, "") for field in _TEXT_FIELDS}
    for field in _TEXT_FIELDS:
        if not isinstance(entry[field], str):
            raise ImproperlyConfigured(f"{where}: {field} must be a string")
    if not entry["base_url"].strip():
        raise ImproperlyConfigured(f"{where}: base_url is required (e.g. http://host:8000/v1)")
    limit = raw.get("concurrency", concurrency)
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ImproperlyConfigured(f"{where}: concurrency must be an integer of at least 1")
    entry["concurrency"] = limit
    return entry


def judge_endpoints(
    default: dict[str, str] | None, more: str, concurrency: int
) -> dict[str, dict[str, Any]]:
    """The endpoints by name: ``default`` (from ``PODIUM_JUDGE_BASE_URL``; None when unset), then
    the entries of ``more`` (the JSON of ``PODIUM_JUDGE_ENDPOINTS``), which may replace it."""
    raw: dict[str, Any] = {"default": default} if default else {}
    if more.strip():
        try:
            parsed = json.loads(more)
        except json.JSONDecodeError as exc:
            raise ImproperlyConfigured(f"{VARIABLE} is not valid JSON: {exc}") from None
        if not isinstance(parsed, dict):
            raise ImproperlyConfigured(f"{VARIABLE} must map names to {SHAPE}")
        raw |= parsed
    return {name: endpoint_entry(name, entry, concurrency) for name, entry in raw.items()}
