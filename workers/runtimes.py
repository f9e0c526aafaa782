"""Which OCI runtime an agent container runs under: gVisor's ``runsc`` or ``runc``.

Under ``runc`` the agent's processes are the host's, with every protection of
``workers.hardening``; under ``runsc`` (gVisor) they also talk to gVisor's own kernel, not the
host's (docs/security.md). The engine names the runtimes it offers (``docker info``'s
``Runtimes``: ``scripts/install.sh`` registers ``runsc`` where it works, docs/deploy.md says how
on an operator's engine).

A task may name its runtime (``Task.agent_runtime``, challenge.yaml's ``runtime``); otherwise
Podium's default is ``runsc`` where the engine offers it, ``runc`` where it does not, and
``runc`` for a task with GPUs (Debian's runsc predates gVisor's GPU proxy: docs/security.md).
A runtime named but missing from the engine refuses the run (``RuntimeMissing``): Podium never
falls back to another one silently.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Literal, get_args

import docker

from workers.faults import RuntimeMissing

Runtime = Literal["runsc", "runc"]
RUNTIMES: tuple[Runtime, ...] = get_args(Runtime)  # the runtimes Podium runs agents under
RUNSC: Runtime = "runsc"
RUNC: Runtime = "runc"


def check(name: str) -> Runtime:
    """``name`` as a ``Runtime``; a ValueError naming the known ones otherwise."""
    for runtime in RUNTIMES:
        if name == runtime:
            return runtime
    raise ValueError(f"unknown agent runtime {name!r}: one of {', '.join(RUNTIMES)}")


def offered(client: docker.DockerClient) -> frozenset[str]:
    """The runtimes ``client``'s engine offers (``docker info``)."""
    return frozenset(client.info().get("Runtimes") or ())


def choose(requested: Runtime | None, offered: Collection[str], *, gpu: bool) -> Runtime:
    """The runtime of an agent container: ``requested`` where the engine offers it, or Podium's
    default (``requested`` None): ``runsc`` where offered, ``runc`` where not or with GPUs."""
    if requested is None:
        return RUNSC if RUNSC in offered and not gpu else RUNC
    if requested not in offered:
        raise RuntimeMissing(
            f"the agent runtime {requested!r} is not offered by this node's Docker engine "
            f"(it offers: {', '.join(sorted(offered)) or 'none'}); the run was not started: "
            f"register {requested} with the engine (docs/deploy.md, 'Agent runtime') or "
            "choose another runtime for the task"
        )
    return requested
