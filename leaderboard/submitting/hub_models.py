"""The models a submission loads by hub id: declared in its build context, allowed by the
challenge (``leaderboard.models.HubModel``), mounted into its containers (``workers.model_store``).

A build context declares them at its top level, as the original platform read them:

- ``aicrowd.json``: ``{"hf_models": [{"repo_id": "org/name", "revision": "main"}, ...]}``;
- ``podium.json``: ``{"models": ["org/name", {"hub_id": "org/name", "revision": "main"}, ...]}``.

An image (an archive or a registry reference) declares them in its label ``org.podium.models``,
a JSON list in ``podium.json``'s form (``LABEL org.podium.models='["org/name"]'``), read when the
build stage has loaded it.

A model not registered for the challenge (or at another revision) refuses the submission, with
the list of those that are.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from django.core.exceptions import ValidationError

from leaderboard.models import Challenge, HubModel
from workers.model_store import ModelStoreError, check_hub_id


def allowed_models(
    manifests: Mapping[str, str], challenge: Challenge, label: str
) -> list[dict[str, str]]:
    """The models an upload's manifests declare, each registered for ``challenge``; raises
    ``ValidationError`` in the team's terms."""
    models = declared_models(manifests, label)
    check_allowed(models, challenge)
    return models


MODELS_LABEL = "org.podium.models"


def image_models(labels: Mapping[str, str], challenge: Challenge) -> list[dict[str, str]]:
    """The models an image's ``org.podium.models`` label declares, each registered for
    ``challenge``; raises ``ValidationError`` in the team's terms."""
    text = labels.get(MODELS_LABEL)
    if text is None:
        return []
    where = f"the image's label {MODELS_LABEL}"
    entries = _parsed(text, where, list, "a JSON list of hub ids")
    found = dict.fromkeys(_model(e, f"{where}[{i}]") for i, e in enumerate(entries))
    models = [{"hub_id": hub_id, "revision": revision} for hub_id, revision in found]
    check_allowed(models, challenge)
    return models


def declared_models(manifests: Mapping[str, str], label: str) -> list[dict[str, str]]:
    """The ``{"hub_id", "revision"}`` an upload's manifests name, in order, each once."""
    found: dict[tuple[str, str], None] = {}
    for name, text in sorted(manifests.items()):
        where = f"{label}: {name}"
        data = _parsed(text, where, dict, "a JSON object")
        key = "hf_models" if name == "aicrowd.json" else "models"
        entries = data.get(key, [])
        if not isinstance(entries, list):
            raise ValidationError(f"{where}: '{key}' must be a list")
        for index, entry in enumerate(entries):
            found[_model(entry, f"{where}: {key}[{index}]")] = None
    return [{"hub_id": hub_id, "revision": revision} for hub_id, revision in found]


def _parsed(text: str, where: str, kind: type, what: str) -> Any:
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ValidationError(f"{where} is not JSON: {exc}") from None
    if not isinstance(data, kind):
        raise ValidationError(f"{where} must hold {what}")
    return data


def _model(entry: Any, where: str) -> tuple[str, str]:
    if isinstance(entry, str):
        entry = {"hub_id": entry}
    if not isinstance(entry, dict):
        raise ValidationError(f"{where} must be a hub id or an object with repo_id")
    hub_id = entry.get("repo_id", entry.get("hub_id"))
    revision = entry.get("revision") or "main"
    if not isinstance(hub_id, str) or not isinstance(revision, str):
        raise ValidationError(f"{where} must name repo_id (and revision) as strings")
    try:
        check_hub_id(hub_id, revision)
    except ModelStoreError as exc:
        raise ValidationError(f"{where}: {exc}") from None
    return hub_id, revision


def check_allowed(models: list[dict[str, str]], challenge: Challenge) -> None:
    """Refuse models the challenge has not registered, naming those it has."""
    allowed = {(m.hub_id, m.revision) for m in HubModel.objects.filter(challenge=challenge)}
    missing = [m for m in models if (m["hub_id"], m["revision"]) not in allowed]
    if not missing:
        return
    named = ", ".join(f"{m['hub_id']}@{m['revision']}" for m in missing)
    offer = ", ".join(f"{h}@{r}" for h, r in sorted(allowed)) or "none"
    raise ValidationError(
        f"{challenge.name} does not provide {named}: the models agents may load are {offer}"
    )
