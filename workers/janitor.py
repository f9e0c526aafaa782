"""A node's janitor: the agent containers and volumes its dead workers left behind, removed.

Every container and volume a pipeline worker creates names its node and its worker
(``workers.sandbox.owner_labels``). A worker that dies (SIGKILL, the machine lost) cannot remove
its own; once its run is taken away (re-queued by the reaper, finished elsewhere) nobody else
would. ``sweep`` removes, on one node's engine, what is labelled with that site and node and
made by a worker ``keep`` does not vouch for. It never touches another node's or another
site's containers (two installations, e.g. two test suites, may share one engine) nor any
unlabelled one (the engine may be shared with anything else on the machine).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import docker
import docker.errors
import requests.exceptions

from workers.sandbox import LABEL_NODE, LABEL_SITE, LABEL_WORKER

logger = logging.getLogger("podium.pipeline")


@dataclass(frozen=True)
class Swept:
    containers: tuple[str, ...]  # names of the containers removed
    volumes: tuple[str, ...]  # names of the volumes removed


def sweep(client: docker.DockerClient, site: str, node: str, keep: Callable[[str], bool]) -> Swept:
    """Remove the containers, then the volumes, labelled with ``site`` and ``node`` whose
    worker label ``keep`` refuses; a volume mounted by a container kept stays (the engine
    refuses)."""
    mine = {"label": [f"{LABEL_SITE}={site}", f"{LABEL_NODE}={node}"]}
    containers = []
    for container in listed_containers(client, mine):
        if keep(container.labels.get(LABEL_WORKER, "")):
            continue
        if _removed(functools.partial(client.api.remove_container, container.id)):
            containers.append(container.name)
    volumes = []
    for volume in client.volumes.list(filters=mine):
        if keep((volume.attrs.get("Labels") or {}).get(LABEL_WORKER, "")):
            continue
        if _removed(volume.remove):
            volumes.append(volume.name)
    if containers or volumes:
        logger.warning(
            "janitor on node %s: removed %d orphaned container(s) %s and %d volume(s) %s",
            node, len(containers), containers, len(volumes), volumes,
        )  # fmt: skip
    return Swept(tuple(containers), tuple(volumes))


@dataclass(frozen=True)
class Listed:
    """A container as the engine's list gave it: no second request that could find it gone."""

    id: str
    name: str
    labels: dict[str, str]


def listed_containers(client: docker.DockerClient, filters: Mapping[str, object]) -> list[Listed]:
    """The containers (running or not) matching ``filters``, from one list request. The SDK's
    ``containers.list`` inspects each one afterwards and fails with NotFound when one was
    removed in between (by its own worker, say)."""
    return [
        Listed(row["Id"], (row.get("Names") or ["/" + row["Id"][:12]])[0].lstrip("/"),
               row.get("Labels") or {})
        for row in client.api.containers(all=True, filters=filters)
    ]  # fmt: skip


def _removed(remove: Callable[..., object]) -> bool:
    try:
        remove(force=True)
    except docker.errors.NotFound:
        return False  # its worker (or the engine) removed it meanwhile
    except (docker.errors.APIError, requests.exceptions.RequestException) as exc:
        logger.info("janitor: left in place for now: %s", exc)
        return False
    return True
