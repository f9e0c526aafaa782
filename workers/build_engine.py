"""The engine a team's build runs on: its image store holds the allowed base images, nothing else.

A build can name any image its engine has (``FROM <id prefix>``, ``COPY --from``, a stage the
Dockerfile check misreads): so no build runs on the node's own engine, which holds every
team's image. It runs on the *build engine* (``PODIUM_BUILD_ENGINE``): a dockerd of its own
(socket, data root, exec root), in a network namespace with no interface up
(``scripts/build-engine.sh``), so the daemon itself cannot pull from a registry or reach any
host. ``session`` is the one way to use it:

1. one build at a time per build engine (a lock beside its socket, across processes);
2. the engine is emptied: every container, and every image but the allowed bases (found by the
   IDs the node's engine has for their names), removed; a build starts only once the engine
   lists nothing else, checked after the removal;
3. a base it lacks is copied from the node's engine once (``docker save`` by ID, loaded, then
   tagged there by Podium), and kept for later builds;
4. the build runs; its image leaves only as an archive (``hand_over``: saved by ID, loaded by
   content into the node's engine, checked to be the same ID);
5. the engine is emptied again, so the next team's build cannot name this one's image.

The build engine must not be the node's engine (refused), and must see no network interface
but loopback (checked once per engine and process: a probe container on the daemon's own
network namespace lists them). The Dockerfile check (``workers.dockerfile``) stays, as an early
error that names the line; no guarantee rests on it.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import tempfile
import threading
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import docker
import docker.errors
import requests.exceptions

from workers import layer_archive
from workers.faults import PodiumFault, TransientFault
from workers.hardening import hardened
from workers.images import AgentImage, agent_image, full_reference

logger = logging.getLogger("podium.builds")
DEFAULT_URL = "unix:///run/podium-build/docker.sock"
CLEAN_PASSES = 5  # removal rounds: an image with children goes once they are gone
_checked: set[str] = set()  # build engines (by URL) found isolated by this process
_checked_lock = threading.Lock()


class BuildEngineUnavailable(TransientFault):
    """The build engine does not answer; builds wait for it (retried), never fall back."""


class BuildEngineUnsafe(PodiumFault):
    """The build engine is not apart from the node's engine or the network; nothing is built."""


def configured_url() -> str:
    """The build engine's socket: ``PODIUM_BUILD_ENGINE``, else the default one."""
    return os.environ.get("PODIUM_BUILD_ENGINE", "").strip() or DEFAULT_URL


@dataclass(frozen=True)
class BuildSession:
    """The build engine, emptied but for ``bases`` (name -> image ID there), for one build."""

    url: str
    client: docker.DockerClient
    bases: dict[str, str]
    store: Path | None  # the engine's overlay2 data root, where this process can read it

    def api(self) -> docker.APIClient:
        """A client of its own (a streaming build holds one connection; closing it cancels)."""
        api = self.client.api
        return docker.APIClient(base_url=self.url, timeout=api.timeout, version=api.api_version)

    def hand_over(
        self, image_id: str, node: docker.DockerClient, tag: str | None = None
    ) -> AgentImage:
        """The built image, loaded by content into ``node``: the only way an image leaves the
        build engine. Its own layers only, read from the engine's store, where Podium can
        read that store (``workers.layer_archive``); else, or if ``node`` refuses that
        archive, the whole image by ``docker save``. ``tag`` (Podium's own images only) is
        set in ``node``."""
        loaded = self._own_layers(image_id, node)
        if loaded is None:
            chunks = self.client.images.get(image_id).save(named=False)
            try:
                loaded = [image.id for image in node.images.load(chunks)]
            except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
                raise PodiumFault(f"the built image did not reach this node: {exc}") from None
        if loaded != [image_id]:
            raise PodiumFault(f"moving {image_id} out of the build engine loaded {loaded}")
        image = node.images.get(image_id)
        if tag:
            image.tag(tag)
            image.reload()
        return agent_image(image, tag)

    def _own_layers(self, image_id: str, node: docker.DockerClient) -> list[str] | None:
        """The image loaded into ``node`` from an archive of the layers past its base's, or
        None where the store cannot be read so or ``node`` refuses the archive."""
        root = self.store
        if root is None:
            return None
        layers = self.client.images.get(image_id).attrs["RootFS"]["Layers"]
        skip = max(
            (len(base) for base in self._base_layers(node) if layers[: len(base)] == base),
            default=0,
        )
        try:
            with tempfile.TemporaryFile(prefix="podium-handover-") as archive:
                layer_archive.write(root, image_id, skip, archive)
                archive.seek(0)
                return [image.id for image in node.images.load(archive)]
        except (layer_archive.LayerStoreError, OSError, ValueError, KeyError) as exc:
            logger.warning("%s: handed over whole (its layers unreadable: %s)", image_id, exc)
        except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
            logger.warning("%s: handed over whole (the node refused its layers: %s)", image_id, exc)
        return None

    def _base_layers(self, node: docker.DockerClient) -> list[list[str]]:
        return [node.images.get(i).attrs["RootFS"]["Layers"] for i in set(self.bases.values())]


def _unix_path(url: str) -> Path:
    if not url.startswith("unix://"):
        raise BuildEngineUnsafe(
            f"PODIUM_BUILD_ENGINE must be a unix:// socket on this node (got {url!r})"
        )
    return Path(url.removeprefix("unix://"))


@contextlib.contextmanager
def _locked(socket: Path) -> Iterator[None]:
    """One build at a time on this engine, across every process of the node."""
    with open(socket.parent / "build.lock", "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@contextlib.contextmanager
def session(
    base_images: Sequence[str], node: docker.DockerClient, url: str | None = None
) -> Iterator[BuildSession]:
    """The build engine at ``url`` for one build: locked, emptied, holding the ``base_images``
    that ``node`` has; emptied again afterwards, whatever happened."""
    url = url or configured_url()
    socket = _unix_path(url)
    if not socket.exists():
        raise BuildEngineUnavailable(
            f"no build engine at {url} (start it: bash scripts/build-engine.sh)"
        )
    with _locked(socket):
        # the node's API version: a client left to find the engine's asks it first (~10 ms)
        client = docker.DockerClient(
            base_url=url, timeout=node.api.timeout, version=node.api.api_version
        )
        try:
            _check_apart(client, node, url)
            keep = _base_ids(base_images, node)
            empty(client, set(keep.values()))
            bases = _with_bases(client, node, keep)
            _check_isolated(client, url, next(iter(bases.values()), None))
            try:
                yield BuildSession(url, client, bases, _store(client, url))
            finally:
                empty(client, set(keep.values()))
        except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
            raise BuildEngineUnavailable(f"the build engine at {url} failed: {exc}") from None
        finally:
            client.close()


_stores: dict[str, Path | None] = {}


def _store(client: docker.DockerClient, url: str) -> Path | None:
    """The engine's overlay2 data root (``PODIUM_BUILD_DATA_ROOT``, else where the engine says
    it is), when this process can read it; found once per engine."""
    if url not in _stores:
        info = client.info()
        root = Path(os.environ.get("PODIUM_BUILD_DATA_ROOT") or info.get("DockerRootDir") or "")
        found = info.get("Driver") == "overlay2" and (root / "image/overlay2/imagedb").is_dir()
        readable = found and os.access(root / "image/overlay2/imagedb", os.R_OK | os.X_OK)
        _stores[url] = root if readable else None
    return _stores[url]


def _check_apart(client: docker.DockerClient, node: docker.DockerClient, url: str) -> None:
    """The build engine is not the node's engine: a volume made in one is not in the other
    (engine IDs cannot tell: two daemons of one host share theirs)."""
    probe = f"podium-build-probe-{uuid.uuid4().hex}"
    try:
        volume = client.volumes.create(probe)
    except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
        raise BuildEngineUnavailable(f"the build engine at {url} does not answer: {exc}") from None
    try:
        shared = bool(node.volumes.list(filters={"name": probe}))
    finally:
        volume.remove(force=True)
    if shared:
        raise BuildEngineUnsafe(
            f"PODIUM_BUILD_ENGINE ({url}) is this node's own engine: a build there could name "
            "any team's image; start a build engine of its own (scripts/build-engine.sh)"
        )


def _base_ids(base_images: Sequence[str], node: docker.DockerClient) -> dict[str, str]:
    """Each allowed base the node's engine has, by its full name: its image ID there."""
    found = {}
    for name in base_images:
        with contextlib.suppress(docker.errors.ImageNotFound):
            found[full_reference(name)] = node.images.get(name).id
    return found


def empty(client: docker.DockerClient, keep: set[str]) -> None:
    """Every container and every image but those in ``keep`` removed from the build engine;
    ``BuildEngineUnsafe`` if anything else is still listed afterwards."""
    for container in client.containers.list(all=True):
        with contextlib.suppress(docker.errors.NotFound):
            container.remove(force=True)
    for _ in range(CLEAN_PASSES):
        extra = [i for i in client.api.images(all=True, quiet=True) if i not in keep]
        if not extra:
            break
        for image_id in extra:
            with contextlib.suppress(docker.errors.NotFound, docker.errors.APIError):
                client.api.remove_image(image_id, force=True)
    left = [i for i in client.api.images(all=True, quiet=True) if i not in keep]
    if left or client.containers.list(all=True):
        raise BuildEngineUnsafe(f"the build engine could not be emptied: {left[:3]} remain")


def _with_bases(
    client: docker.DockerClient, node: docker.DockerClient, keep: dict[str, str]
) -> dict[str, str]:
    """The bases in the build engine, copied from ``node`` where missing, tagged by Podium."""
    have = set(client.api.images(all=True, quiet=True))
    for name, image_id in keep.items():
        if image_id not in have:
            loaded = client.images.load(node.images.get(image_id).save(named=False))
            if [image.id for image in loaded] != [image_id]:
                raise BuildEngineUnsafe(f"copying {name} into the build engine loaded {loaded}")
            have.add(image_id)
        image = client.images.get(image_id)
        if "@" not in name and name not in {full_reference(tag) for tag in image.tags}:
            image.tag(name)
    return keep


def _check_isolated(client: docker.DockerClient, url: str, probe_image: str | None) -> None:
    """The daemon's network namespace has no interface but loopback (once per engine)."""
    with _checked_lock:
        if url in _checked:
            return
        if probe_image is None:
            raise BuildEngineUnsafe(
                f"the build engine at {url} cannot be checked: this node has none of the "
                "allowed base images (bash deploy/agent-base/build.sh)"
            )
        probe = {
            **hardened(memory_bytes=64 * 1024 * 1024, pids_limit=16),
            "network_mode": "host",  # the one difference: the daemon's namespace, to list it
        }
        output = client.containers.run(
            probe_image, ["/proc/net/dev"], entrypoint="cat", remove=True, **probe
        )
        found = interfaces(output.decode(errors="replace"))
        if found - {"lo"}:
            raise BuildEngineUnsafe(
                f"the build engine at {url} reaches a network ({', '.join(sorted(found))}): "
                "its daemon could pull or connect; run it in a namespace of its own "
                "(scripts/build-engine.sh)"
            )
        _checked.add(url)


def interfaces(proc_net_dev: str) -> set[str]:
    """The interface names in ``/proc/net/dev``'s text."""
    return {line.split(":", 1)[0].strip() for line in proc_net_dev.splitlines() if ":" in line}
