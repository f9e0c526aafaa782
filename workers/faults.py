"""Whose fault a failure is: the one module that says so. Every error the pipeline acts on
derives from one of these three, and the stage tasks (``workers/tasks.py``) decide by them.

- ``TeamFault``: what the team sent is at fault (its upload, its image, its agent's behaviour).
  The submission or run fails; the team reads the reason, in Podium's words only (never bytes
  its agent sent, for a private split); it counts against the team's quota.
- ``PodiumFault``: Podium cannot evaluate it (its configuration, stored data, a base image or a
  bug). The run fails with a fixed reason safe for the team; organisers read the detail; the
  quota is refunded.
- ``TransientFault``: Podium's side failed for now (the Docker engine, storage, the judge
  endpoint, the search process). The stage is retried later, with back-off, and resumes from
  what is stored; after too many retries the run fails as Podium's fault.
"""

from __future__ import annotations


class TeamFault(Exception):
    """The team's submission or agent is at fault; ``str(exc)`` is the reason the team reads."""


class PodiumFault(Exception):
    """Podium cannot evaluate the run; the team's quota is refunded, organisers see why."""


class TransientFault(Exception):
    """Podium's side failed for now: retry the stage later."""
