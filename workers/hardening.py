"""The protections of every container Podium runs a team's code (or its image) in, written once.

The agent's sandbox (``workers.sandbox``), the check of a built image (``workers.build_notices``)
and the package-index gate (``workers.package_index``) take these ``containers.create`` /
``containers.run`` arguments and add only what differs: their mounts, their sizes, the agent's
scratch and limits. No network (no interface but loopback), an unprivileged user, a read-only
root, no capabilities, no privilege gain (setuid binaries do not elevate), a private IPC
namespace, memory (swap included) and process limits, and a capped log. A caller that must
differ says so where it calls (the build engine's probe lists the daemon's own network
namespace). ``tests/workers/test_sandbox_conformance.py`` checks, in real containers, that
each configuration built from these holds them.
"""

from __future__ import annotations

from typing import Literal, TypedDict

from docker.types import LogConfig

AGENT_UID = 10001
AGENT_GID = 10001
AGENT_USER = f"{AGENT_UID}:{AGENT_GID}"
NO_NETWORK = "none"  # Docker's network mode with loopback only
NO_NEW_PRIVILEGES = "no-new-privileges"


class Hardened(TypedDict):
    """Docker-py's container arguments that every hardened container carries."""

    user: str
    network_mode: str
    read_only: Literal[True]
    cap_drop: list[str]
    security_opt: list[str]
    privileged: Literal[False]
    ipc_mode: str
    pids_limit: int
    mem_limit: int
    memswap_limit: int
    log_config: LogConfig


# Under gVisor (runsc) the engine's pids limit counts the sandbox's own host threads, not the
# agent's tasks: gVisor's kernel, its file proxy and, on the ptrace platform, a traced stub
# process and tracing threads per task (measured with Debian's runsc 0.0~20221219: about 56
# idle, then 7-8 more per agent process: docs/security.md, "Agent runtime: gVisor"). The limit
# it is given allows that many per task the agent may have, so that the host's threads stay
# bounded and an agent within its own limit is not ended by gVisor's.
RUNSC_OWN_THREADS = 64
RUNSC_THREADS_PER_TASK = 8


def pids_limit_for(pids_limit: int, runtime: str | None) -> int:
    """The engine's pids limit for a container whose processes and threads ``pids_limit``
    bounds, under ``runtime`` (None: the engine's default, runc)."""
    if runtime == "runsc":
        return RUNSC_OWN_THREADS + RUNSC_THREADS_PER_TASK * pids_limit
    return pids_limit


def hardened(
    *,
    memory_bytes: int,
    pids_limit: int,
    log_max_bytes: int = 64 * 1024,
    runtime: str | None = None,
) -> Hardened:
    """The arguments of a hardened container: ``memory_bytes`` of memory and no swap, at most
    ``pids_limit`` processes and threads (``pids_limit_for`` its ``runtime``), a json-file log
    of at most ``log_max_bytes``."""
    if memory_bytes <= 0 or pids_limit <= 0 or log_max_bytes <= 0:
        raise ValueError(
            f"hardened: sizes must be positive (memory {memory_bytes}, pids {pids_limit}, "
            f"log {log_max_bytes})"
        )
    return Hardened(
        user=AGENT_USER,
        network_mode=NO_NETWORK,
        read_only=True,
        cap_drop=["ALL"],
        security_opt=[NO_NEW_PRIVILEGES],
        privileged=False,
        ipc_mode="private",
        pids_limit=pids_limit_for(pids_limit, runtime),
        mem_limit=memory_bytes,
        memswap_limit=memory_bytes,  # the same: no swap
        log_config=LogConfig(
            type="json-file", config={"max-size": str(log_max_bytes), "max-file": "1"}
        ),
    )
