"""The sandbox an agent container runs in, as Docker ``containers.create`` arguments.

Every protection is on by default; an organiser tunes the sizes (memory, CPUs, GPUs, scratch)
per task, never switches a protection off. The protections themselves (no network, an
unprivileged user, a read-only root, no capabilities, no privilege gain, memory and process
limits) are ``workers.hardening``'s, which the other containers of a team's image share.

Two small docker volumes backed by tmpfs (local driver, ``type=tmpfs``) are mounted, both
fresh for every container start:

- the socket directory at ``/podium/sock``, owned by the agent's uid, so a hostile agent cannot
  fill the host disk through it: it holds at most ``socket_dir_bytes`` of memory;
- the image directory at ``/podium/images``, mounted read-only and owned by the runner, sized
  by the runner for three batches of the split's images: the one answered last, the one the
  agent may read and the next one, staged where it may not (see ``workers/image_volume.py``).

Docker mounts each tmpfs at the volume's host ``Mountpoint`` while the container runs; the
runner (root on the Docker host) reaches ``agent.sock`` there, places ``search.sock`` next to it
and writes the batches' images. The root filesystem is read-only; ``/tmp`` is a
size-capped tmpfs for scratch. The models a submission declared (``workers.model_store``) are
mounted read-only into a Hugging Face cache at ``MODEL_DIR`` (``HF_HOME``; a small writable
tmpfs holding them, for the locks libraries write), the hub set offline. Nothing from the
split's ground truth is ever mounted or passed
in the environment. ``NVIDIA_VISIBLE_DEVICES`` is always set: CUDA base images default it to
``all``, which on a host whose default runtime is nvidia would expose every GPU.
"""

from __future__ import annotations

import dataclasses
import os
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import docker
from docker.types import DeviceRequest, Mount, Ulimit

from agentkit.protocol import ENV_TASK, IMAGE_DIR, SOCKET_DIR
from workers.hardening import AGENT_GID, AGENT_UID, hardened
from workers.model_store import MODEL_DIR, model_environment
from workers.runtimes import Runtime, choose, offered

LABEL_RUN = "podium.run"  # every container and volume Podium creates carries this label
LABEL_IMAGE = "podium.image"  # ... and this one: the image ID it runs (or ran)
# A pipeline's containers and volumes also name their site (the Podium installation: its
# database), node and worker (``owner_labels``): the node's janitor (``workers/janitor.py``)
# removes its site's whose worker holds no run any more.
LABEL_SITE = "podium.site"
LABEL_NODE = "podium.node"
LABEL_WORKER = "podium.worker"
NO_GPU = "void"  # NVIDIA_VISIBLE_DEVICES value that exposes no GPU

MiB = 1024 * 1024
GiB = 1024 * MiB


@dataclass(frozen=True)
class SandboxPolicy:
    """What an agent container may use. Sizes are bytes; ``gpus`` is None, "all" or "0,1"."""

    memory_bytes: int = 16 * GiB  # hard limit; swap disabled (memswap == memory)
    cpus: float = 4.0
    pids_limit: int = 512
    nofile: int = 4096
    scratch_bytes: int = 1 * GiB  # tmpfs /tmp, counted against the memory limit
    shm_bytes: int = 256 * MiB  # tmpfs /dev/shm (noexec), counted against the memory limit
    socket_dir_bytes: int = 1 * MiB  # tmpfs volume at /podium/sock
    log_max_bytes: int = 1 * MiB  # json-file log kept by Docker, one file
    gpus: str | None = None
    # the model store folders (``model_store.stored``) of the models the agent may load
    models: tuple[Path, ...] = ()
    # more labels on the container and its volumes: ``owner_labels`` (node and worker)
    labels: tuple[tuple[str, str], ...] = ()
    # the OCI runtime (``workers.runtimes``); None: Podium's default, chosen by ``settled``
    runtime: Runtime | None = None

    def __post_init__(self) -> None:
        for name in (
            "memory_bytes",
            "pids_limit",
            "nofile",
            "scratch_bytes",
            "shm_bytes",
            "socket_dir_bytes",
        ):
            if getattr(self, name) <= 0:
                value = getattr(self, name)
                raise ValueError(f"SandboxPolicy.{name} must be positive, got {value}")
        if self.cpus <= 0:
            raise ValueError(f"SandboxPolicy.cpus must be positive, got {self.cpus}")
        if self.log_max_bytes < 1024:
            raise ValueError("SandboxPolicy.log_max_bytes must be at least 1024")

    def settled(self, client: docker.DockerClient) -> SandboxPolicy:
        """This policy with its runtime chosen on ``client``'s engine (``workers.runtimes``:
        the one named, or Podium's default; ``RuntimeMissing`` when the engine lacks it)."""
        runtime = choose(self.runtime, offered(client), gpu=bool(self.device_requests()))
        return dataclasses.replace(self, runtime=runtime)

    def device_requests(self) -> list[DeviceRequest]:
        """The GPU request for ``gpus`` ("all" or a comma-separated list of device ids)."""
        if not self.gpus:
            return []
        if self.gpus == "all":
            return [DeviceRequest(count=-1, capabilities=[["gpu"]])]
        ids = [d.strip() for d in self.gpus.split(",") if d.strip()]
        if not ids:
            raise ValueError(f"SandboxPolicy.gpus must be 'all' or device ids, got {self.gpus!r}")
        return [DeviceRequest(device_ids=ids, capabilities=[["gpu"]])]

    def visible_devices(self) -> str:
        """``NVIDIA_VISIBLE_DEVICES``: the granted device ids, "all", or "void" for none."""
        (request,) = self.device_requests() or [None]
        if request is None:
            return NO_GPU
        return ",".join(request["DeviceIDs"]) if request["DeviceIDs"] else "all"

    def container_kwargs(
        self, image: str, task: str, socket_volume: str, image_volume: str, run_id: str
    ) -> dict[str, Any]:
        """Arguments for ``client.containers.create`` running ``image`` for ``task``: the
        hardening every container of a team's has (``workers.hardening``), this policy's sizes,
        its mounts and scratch."""
        protections = hardened(
            memory_bytes=self.memory_bytes,
            pids_limit=self.pids_limit,
            log_max_bytes=self.log_max_bytes,
            runtime=self.runtime,
        )
        return {
            **protections,
            "image": image,
            "detach": True,
            "environment": {
                ENV_TASK: task,
                "HOME": "/tmp",
                "NVIDIA_VISIBLE_DEVICES": self.visible_devices(),
                **model_environment(),
            },
            "labels": self.labels_for(run_id, image),
            "hostname": "agent",
            # exec: JIT compilers (triton, inductor) load the code they write to scratch.
            "tmpfs": {
                "/tmp": f"rw,exec,nosuid,nodev,size={self.scratch_bytes},mode=1777",
                MODEL_DIR: "rw,noexec,nosuid,nodev,size=16m,mode=1777",
            },
            "mounts": [
                Mount(target=SOCKET_DIR, source=socket_volume, type="volume"),
                Mount(target=IMAGE_DIR, source=image_volume, type="volume", read_only=True),
                *(
                    Mount(
                        target=f"{MODEL_DIR}/hub/{folder.name}",
                        source=str(folder),
                        type="bind",
                        read_only=True,
                    )
                    for folder in self.models
                ),
            ],
            "shm_size": self.shm_bytes,  # PyTorch data loaders and NCCL use /dev/shm
            "init": True,  # docker-init as PID 1 reaps zombies and forwards signals
            # Docker refuses a quota above the CPUs it may use (its affinity); the runner runs on
            # the Docker host, on the same CPU set (a node pinned to some: taskset, a cpuset).
            "nano_cpus": int(min(self.cpus, len(os.sched_getaffinity(0))) * 1e9),
            "ulimits": [
                Ulimit(name="nofile", soft=self.nofile, hard=self.nofile),
                Ulimit(name="core", soft=0, hard=0),
            ],
            "device_requests": self.device_requests(),
            **({"runtime": self.runtime} if self.runtime else {}),  # None: the engine's default
        }

    def labels_for(self, run_id: str, image: str) -> dict[str, str]:
        """The labels of a container and its volumes."""
        return {LABEL_RUN: run_id, LABEL_IMAGE: image, **dict(self.labels)}

    def create_socket_volume(self, client: docker.DockerClient, run_id: str, image: str) -> Any:
        """A fresh tmpfs-backed volume for the socket directory, owned by the agent's uid."""
        owner = f"uid={AGENT_UID},gid={AGENT_GID},mode=0700"
        labels = self.labels_for(run_id, image)
        return _tmpfs_volume(client, "sock", self.socket_dir_bytes, owner, run_id, labels)

    def create_image_volume(
        self, client: docker.DockerClient, run_id: str, image: str, size_bytes: int
    ) -> Any:
        """A fresh tmpfs-backed volume of ``size_bytes`` for the image directory, owned by the
        runner (who writes it; the agent reads it through a read-only mount). The runner must
        not share the agent's uid: its directories of mode 0700 hide staged images by owner."""
        if os.geteuid() == AGENT_UID:
            raise RuntimeError(
                f"the runner runs as uid {AGENT_UID}, the agent's: it could not hide staged images"
            )
        owner = f"uid={os.geteuid()},gid={os.getegid()},mode=0755"
        labels = self.labels_for(run_id, image)
        return _tmpfs_volume(client, "images", size_bytes, owner, run_id, labels)


def owner_labels(site: str, node: str, worker: str) -> tuple[tuple[str, str], ...]:
    """``SandboxPolicy.labels`` naming the site, node and worker process running a container."""
    return ((LABEL_SITE, site), (LABEL_NODE, node), (LABEL_WORKER, worker))


def _tmpfs_volume(
    client: docker.DockerClient,
    kind: str,
    size_bytes: int,
    owner: str,
    run_id: str,
    labels: dict[str, str],
) -> Any:
    if size_bytes <= 0:
        raise ValueError(f"a {kind} volume must have a positive size, got {size_bytes}")
    return client.volumes.create(
        name=f"podium-{kind}-{run_id}-{uuid.uuid4().hex[:8]}",
        driver="local",
        driver_opts={
            "type": "tmpfs",
            "device": "tmpfs",
            "o": f"size={size_bytes},{owner},nosuid,nodev,noexec",
        },
        labels=labels,
    )
