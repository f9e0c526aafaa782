"""The sandbox an agent container runs in, as Docker ``containers.create`` arguments.

Every protection is on by default; an organiser tunes the sizes (memory, CPUs, GPUs, scratch)
per task, never switches a protection off.

The only mount is the per-run socket directory at ``/podium/sock``. It is a small docker volume
backed by tmpfs (local driver, ``type=tmpfs``) owned by the agent's uid, so a hostile agent
cannot fill the host disk through it: it holds at most ``socket_dir_bytes`` of memory. Docker
mounts that tmpfs at the volume's host ``Mountpoint`` while the container runs; the runner
(root on the Docker host) reaches ``agent.sock`` there and places ``search.sock`` next to it.
The root filesystem is read-only; ``/tmp`` is a size-capped tmpfs for scratch. Nothing from the
split's ground truth is ever mounted or passed in the environment.
"""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass
from typing import Any

import docker
from docker.types import DeviceRequest, LogConfig, Mount, Ulimit

from agentkit.protocol import ENV_TASK, SOCKET_DIR

AGENT_UID = 10001
AGENT_GID = 10001
LABEL_RUN = "podium.run"  # every container and volume Podium creates carries this label
LABEL_IMAGE = "podium.image"  # ... and this one: the image ID it runs (or ran)

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
    socket_dir_bytes: int = 1 * MiB  # tmpfs volume at /podium/sock
    log_max_bytes: int = 1 * MiB  # json-file log kept by Docker, one file
    gpus: str | None = None

    def __post_init__(self) -> None:
        for name in ("memory_bytes", "pids_limit", "nofile", "scratch_bytes", "socket_dir_bytes"):
            if getattr(self, name) <= 0:
                value = getattr(self, name)
                raise ValueError(f"SandboxPolicy.{name} must be positive, got {value}")
        if self.cpus <= 0:
            raise ValueError(f"SandboxPolicy.cpus must be positive, got {self.cpus}")
        if self.log_max_bytes < 1024:
            raise ValueError("SandboxPolicy.log_max_bytes must be at least 1024")

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

    def container_kwargs(self, image: str, task: str, socket_volume: str, run_id: str) -> dict:
        """Arguments for ``client.containers.create`` running ``image`` for ``task``."""
        return {
            "image": image,
            "detach": True,
            "environment": {ENV_TASK: task, "HOME": "/tmp"},
            "labels": {LABEL_RUN: run_id, LABEL_IMAGE: image},
            "hostname": "agent",
            "user": f"{AGENT_UID}:{AGENT_GID}",
            "network_mode": "none",
            "read_only": True,
            # exec: JIT compilers (triton, inductor) load the code they write to scratch.
            "tmpfs": {"/tmp": f"rw,exec,nosuid,nodev,size={self.scratch_bytes},mode=1777"},
            "mounts": [Mount(target=SOCKET_DIR, source=socket_volume, type="volume")],
            "cap_drop": ["ALL"],
            "security_opt": ["no-new-privileges"],
            "privileged": False,
            "ipc_mode": "private",
            "init": True,  # docker-init as PID 1 reaps zombies and forwards signals
            "pids_limit": self.pids_limit,
            "mem_limit": self.memory_bytes,
            "memswap_limit": self.memory_bytes,
            # Docker refuses a quota above the host's CPUs; the runner runs on the Docker host.
            "nano_cpus": int(min(self.cpus, os.cpu_count() or 1) * 1e9),
            "ulimits": [
                Ulimit(name="nofile", soft=self.nofile, hard=self.nofile),
                Ulimit(name="core", soft=0, hard=0),
            ],
            "log_config": LogConfig(
                type="json-file",
                config={"max-size": str(self.log_max_bytes), "max-file": "1"},
            ),
            "device_requests": self.device_requests(),
        }

    def create_socket_volume(self, client: docker.DockerClient, run_id: str, image: str) -> Any:
        """A fresh tmpfs-backed volume for the socket directory, owned by the agent's uid."""
        options = (
            f"size={self.socket_dir_bytes},uid={AGENT_UID},gid={AGENT_GID},mode=0700,"
            "nosuid,nodev,noexec"
        )
        return client.volumes.create(
            name=f"podium-sock-{run_id}-{uuid.uuid4().hex[:8]}",
            driver="local",
            driver_opts={"type": "tmpfs", "device": "tmpfs", "o": options},
            labels={LABEL_RUN: run_id, LABEL_IMAGE: image},
        )
