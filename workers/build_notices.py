"""Podium's notices on a built image, for its build log: what the team should know of it.

Today one: an official ``cragmm_search`` the image installs, which Podium's stand-in (its search
client) replaces. The check runs the team's image, so it is held like any team code: no
network, an unprivileged user, a read-only root, no capabilities, memory and process limits, at
most ``NOTICE_CHECK_S``, and only a few lines of what it prints are read.
"""

from __future__ import annotations

import contextlib
from typing import Any

import docker
import docker.errors
import requests.exceptions

from workers.hardening import hardened

NOTICE_CHECK_S = 30
CHECK_MEMORY_BYTES, CHECK_PIDS = 512 * 1024 * 1024, 64
NOTICE_LINES, NOTICE_BYTES = 5, 4096  # what is read of the check's output, at most
# Run in the built image: any cragmm_search it installs besides Podium's stand-in.
_FIND_SEARCH = (
    "from agentkit.server import replaced_search_packages as r; print(*r()[:5], sep='\\n')"
)


def check_container(image_id: str) -> dict[str, Any]:
    """``containers.run``'s arguments for the check in ``image_id``: hardened as every
    container of a team's (``workers.hardening``), with small limits."""
    return {
        # the team's Python may print anything: Docker keeps at most 64 KiB of it
        **hardened(memory_bytes=CHECK_MEMORY_BYTES, pids_limit=CHECK_PIDS, log_max_bytes=65536),
        "image": image_id,
        "command": ["-c", _FIND_SEARCH],
        "entrypoint": "python3",
        "detach": True,
        "environment": {"HOME": "/tmp"},
    }


def notices(client: docker.DockerClient, image_id: str) -> list[str]:
    """Podium's notices on a built image: an official ``cragmm_search`` it installs, which
    Podium's stand-in replaces. Run in the image with no network, for at most
    ``NOTICE_CHECK_S``; an image whose Python does not answer gets no notice."""
    try:
        container = client.containers.run(**check_container(image_id))
    except docker.errors.DockerException:
        return []
    try:
        container.wait(timeout=NOTICE_CHECK_S)
        output = container.logs(stdout=True, stderr=False, tail=NOTICE_LINES)
        found = output[:NOTICE_BYTES].decode(errors="replace").splitlines()[:NOTICE_LINES]
    except (docker.errors.DockerException, requests.exceptions.RequestException):
        found = []
    finally:
        with contextlib.suppress(docker.errors.DockerException):
            container.remove(force=True)
    return [
        f"podium: this image installs its own cragmm_search ({path[:200]}); Podium's "
        "stand-in (its search client) is imported instead"
        for path in found
        if path.strip()
    ]
