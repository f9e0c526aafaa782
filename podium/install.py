"""This installation's id, and the prefix of everything it keeps in Redis.

Two Podium installs may share one Redis database (a staging install beside production, a
managed Redis with a single database). They never see each other's messages or keys, by
construction: every key that this install's processes read or write in Redis begins with its
prefix, ``podium:<install id>:``:

- Celery's broker: its queues, the unacked hash, the bindings, the fanout and pidbox channels
  (kombu's ``global_keyprefix`` transport option, ``CELERY_BROKER_TRANSPORT_OPTIONS``);
- Celery's results (the result backend's ``global_keyprefix``);
- Django's cache: the board's fragments, the API throttles (``CACHES``' ``KEY_PREFIX``);
- Podium's own keys: the event metrics, the GPU nodes, the judge slots (``key``).

The id is ``PODIUM_INSTALL_ID`` when set, else a digest of where the database is, so the web,
the workers and beat, configured with the same ``DATABASE_URL``, compute the same id without
asking anyone, one database gives one id whatever the process, and two databases two. The
node's janitor labels its containers with it too (``leaderboard.pipeline.node.site``).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

EXPLICIT_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")


def install_id(database: Mapping[str, object], explicit: str = "") -> str:
    """The install's id: ``explicit`` (``PODIUM_INSTALL_ID``) when given, else a digest of
    where ``database`` (Django's ``DATABASES["default"]``) is."""
    if explicit:
        if not EXPLICIT_ID.fullmatch(explicit):
            raise ImproperlyConfigured(
                f"PODIUM_INSTALL_ID={explicit!r}: expected 1 to 64 letters, digits, '-' or '_'"
            )
        return explicit
    fields = (database.get(name) for name in ("ENGINE", "HOST", "PORT", "NAME"))
    where = "|".join(str(value) for value in fields)
    return hashlib.sha256(where.encode()).hexdigest()[:16]


def redis_prefix(install: str) -> str:
    """What every Redis key of ``install`` begins with."""
    return f"podium:{install}:"


def key(name: str) -> str:
    """One of Podium's own Redis keys (``metrics:...``, ``nodes:gpu``), in this install's
    namespace (``PODIUM_REDIS_PREFIX``)."""
    return f"{settings.PODIUM_REDIS_PREFIX}{name}"
