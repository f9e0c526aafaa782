"""The sandbox conformance checks: one set, asserted on any running container (``Subject``)
against what its configuration declares. ``test_sandbox_conformance.py`` runs them on every
configuration Podium runs a team's code in, and on containers lacking a protection, where each
check must fail."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.workers import sandbox_gvisor
from tests.workers.sandbox_gvisor import SandboxEnded
from workers.build_engine import interfaces

PROBE = (Path(__file__).parent / "sandbox_probe.py").read_text()
SETUID_BINARY = "/usr/local/bin/id-setuid"  # root's, setuid: prints the effective uid
# Writable in every container: its own IPC namespace's (shared memory, message queues).
PRIVATE_IPC = ("/dev/shm", "/dev/mqueue")
# What Docker mounts in every container, by type: pseudo filesystems, and its own tmpfs.
DOCKER_OWN = {
    "/": "overlay",
    "/proc": "proc",
    "/sys": "sysfs",
    "/dev": "tmpfs",
    "/dev/pts": "devpts",
    "/dev/mqueue": "mqueue",
    "/dev/shm": "tmpfs",
    "/sys/fs/cgroup": "tmpfs",
}
DOCKER_INIT = ("/sbin/docker-init", "/usr/sbin/docker-init")  # where "init": True binds it
INITS = ("docker-init", "tini", "tini-static")  # ... the engine's init binary
NETWORK_FILES = ("/etc/resolv.conf", "/etc/hostname", "/etc/hosts")  # from Docker's own folder
ROOT_PATHS = ("/", "/usr", "/usr/lib", "/etc", "/var/tmp", "/agent", "/opt/venv")
EXEC_POLL_S = 5.0
ENDED_WAIT_S = 5.0  # a failed exec: how long the container may take to be seen ending
KNOWN_SOCKETS = (
    "/var/run/docker.sock",
    "/run/docker.sock",
    "/run/podium-build/docker.sock",
    "/run/containerd/containerd.sock",
)


@dataclass(frozen=True)
class Configuration:
    """A way Podium runs a container of a team's: what it declares, what of it is checked."""

    name: str
    engine: str  # "node" (the node's engine) or "build" (the build engine)
    memory_bytes: int
    pids_limit: int
    cpus: float | None  # None: no CPU quota configured
    # declared: target -> filesystem type ("bind": a host folder made for this container)
    mounts: dict[str, str] = field(default_factory=dict)
    writable: tuple[str, ...] = ()  # declared mounts it may write
    socket_dirs: tuple[str, ...] = ()  # where a Unix socket may be
    uid: int = 10001
    runtime: str = "runc"  # "runsc": gVisor's kernel answers the probes (GVISOR_* below)
    not_applicable: dict[str, str] = field(default_factory=dict)  # check -> why not
    shows_failing: frozenset[str] = frozenset()  # a control: the checks it must fail

    @property
    def checks(self) -> list[str]:
        if self.shows_failing:
            return [name for name in CHECKS if name in self.shows_failing]
        return [name for name in CHECKS if name not in self.not_applicable]


@dataclass
class Subject:
    """A running container of ``configuration``, and what the checks need around it."""

    configuration: Configuration
    container: Any  # docker's Container
    secret_names: tuple[str, ...]  # files of another team's, and of the host's
    host_addresses: tuple[str, ...]
    listening_port: int  # on every host address, accepting
    bound: dict[str, str] = field(default_factory=dict)  # target -> the host folder bound there
    seen: dict[str, dict] = field(default_factory=dict)

    def probe(self, name: str, **args: Any) -> dict:
        """``sandbox_probe.<name>(args)`` run in the container (once per name and args)."""
        key = f"{name} {json.dumps(args, sort_keys=True)}"
        if key not in self.seen:
            code, output = self._exec(["python3", "-c", PROBE, name, json.dumps(args)])
            text = output.decode(errors="replace")
            if code != 0:  # not an AssertionError: a control must fail a check, not its probe
                raise RuntimeError(f"probe {name} exited {code}: {text[-2000:]}")
            self.seen[key] = json.loads(text.strip().splitlines()[-1])
        return self.seen[key]

    def _exec(self, command: list[str]) -> tuple[int, bytes]:
        """``exec_run``; :class:`SandboxEnded` where the container ends meanwhile (under gVisor
        the engine's exec then never returns)."""
        done: list[tuple[int, bytes]] = []
        thread = threading.Thread(
            target=lambda: done.append(self.container.exec_run(command)), daemon=True
        )
        thread.start()
        while True:
            thread.join(EXEC_POLL_S)
            if done:
                code, output = done[0]
                # gVisor's sandbox ending under an exec may answer first ("WaitPID failed:
                # EOF"), before the engine marks the container exited.
                if code != 0 and self._ends_within(ENDED_WAIT_S):
                    raise SandboxEnded(self.container.attrs["State"])
                return code, output
            if self._ends_within(0.0):
                raise SandboxEnded(self.container.attrs["State"])

    def _ends_within(self, seconds: float) -> bool:
        """Whether the container is seen not running within ``seconds``."""
        deadline = time.monotonic() + seconds
        while True:
            self.container.reload()
            if self.container.status != "running":
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.25)

    def filesystem(self) -> dict:
        return self.probe(
            "filesystem",
            secret_names=list(self.secret_names),
            root_paths=list(ROOT_PATHS),
            known_sockets=list(KNOWN_SOCKETS),
        )


# -- no network


def no_interface_but_loopback(s: Subject) -> None:
    seen = s.probe("network", addresses=[], port=s.listening_port)
    assert interfaces(seen["proc_net_dev"]) == {"lo"}, seen["proc_net_dev"]
    assert seen["sys_class_net"] == ["lo"], seen["sys_class_net"]


def no_host_reached(s: Subject) -> None:
    addresses = [*s.host_addresses, "127.0.0.1"]
    seen = s.probe("network", addresses=addresses, port=s.listening_port)
    assert len(seen["connects"]) == len(addresses) >= 2
    reached = {a: r for a, r in seen["connects"].items() if not r.startswith("failed")}
    assert not reached, f"reached the host at {reached}"


# -- no privileges


def no_capabilities(s: Subject) -> None:
    seen = s.probe("privileges", setuid_binary=SETUID_BINARY)
    assert set(seen["capget"].values()) == {"0" * 16}, seen["capget"]
    gvisor = s.configuration.runtime == "runsc"
    for process in ("self", "init"):
        for name in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
            value = seen[process][name]
            if value is None and gvisor and name == "CapAmb":
                # gVisor's status has no CapAmb: an ambient capability is one both permitted
                # and inheritable, and capget said none is (the probe; init: CapPrm, CapInh)
                continue
            assert value is not None and int(value, 16) == 0, (process, name, value)


def no_new_privileges(s: Subject) -> None:
    seen = s.probe("privileges", setuid_binary=SETUID_BINARY)
    assert seen["no_new_privs"] == 1, seen  # prctl(PR_GET_NO_NEW_PRIVS): any kernel's answer
    statuses = {seen["self"]["NoNewPrivs"], seen["init"]["NoNewPrivs"]}
    # gVisor's /proc status has no NoNewPrivs line: its prctl is the one reading there
    assert statuses == ({None} if s.configuration.runtime == "runsc" else {"1"}), seen


def the_configured_user(s: Subject) -> None:
    seen = s.probe("privileges", setuid_binary=SETUID_BINARY)
    uid = s.configuration.uid
    assert uid != 0 and seen["ids"] == [uid, uid, uid, uid], seen["ids"]
    assert 0 not in seen["groups"], seen["groups"]
    for process in ("self", "init"):
        assert set(seen[process]["Uid"].split()) == {str(uid)}, seen[process]


def cannot_mount(s: Subject) -> None:
    seen = s.probe("privileges", setuid_binary=SETUID_BINARY)
    assert seen["mount"].startswith("failed"), seen["mount"]
    if s.configuration.runtime == "runsc":
        # gVisor lets an unprivileged process make user and mount namespaces, as Linux does
        # without Docker's seccomp profile, but inside its own kernel: they are gVisor's
        # objects, the host sees none, and capabilities in them reach nothing outside (the
        # sandbox's host processes have none: no_capabilities).
        return
    for action in ("unshare_user", "unshare_mount"):
        assert seen[action].startswith("failed"), (action, seen[action])


def setuid_does_not_elevate(s: Subject) -> None:
    seen = s.probe("privileges", setuid_binary=SETUID_BINARY)["setuid_binary"]
    assert seen["owner"] == 0 and seen["setuid_bit"], f"the image's {SETUID_BINARY}: {seen}"
    assert seen["euid_printed"] == str(s.configuration.uid), seen


# -- a read-only root


def read_only_root(s: Subject) -> None:
    seen = s.filesystem()
    # gVisor checks the uid's permission first (EACCES where the mode forbids it anyway); the
    # folders the mode lets the uid write (root_writable_dirs) show the root read-only
    refusals = ("failed: EROFS", "failed: EACCES") if s.configuration.runtime == "runsc" else ()
    assert all(r in ("failed: EROFS", *refusals) for r in seen["writes"].values()), seen["writes"]
    written = {p: r for p, r in seen["root_writable_dirs"].items() if r != "failed: EROFS"}
    assert not written, f"folders of the image written: {written}"


def only_declared_places_writable(s: Subject) -> None:
    seen = s.filesystem()
    masks = {m["target"] for m in seen["mounts"] if m["root"] == "/null"}  # Docker's /dev/null
    writable = {t for t, r in seen["writable_mounts"].items() if r == "succeeded"} - masks
    allowed = {*s.configuration.writable, *PRIVATE_IPC}
    assert writable <= allowed, f"writable beyond the declared: {writable - allowed}"


# -- limits


def memory_limited(s: Subject) -> None:
    limit = s.configuration.memory_bytes
    if s.configuration.runtime == "runsc":
        seen = sandbox_gvisor.memory_seen(s)
    else:
        seen = s.probe("memory", bytes=limit + 64 * 1024 * 1024)
        assert seen["returncode"] == -9 or "MemoryError" in seen["stderr"], seen
    assert seen["limit"] is not None and int(seen["limit"]) == limit, seen
    assert seen["with_swap"] in (str(limit), "0"), f"swap is not off: {seen}"


def pids_limited(s: Subject) -> None:
    limit = s.configuration.pids_limit
    if s.configuration.runtime != "runsc":
        seen = s.probe("pids", at_most=4 * limit)
        assert seen["error"] == "EAGAIN" and seen["forked"] < limit, seen
        assert seen["max"] == str(limit), seen
        return
    sandbox_gvisor.pids_held(s)


def cpu_quota_holds(s: Subject) -> None:
    cpus = s.configuration.cpus
    assert cpus is not None, "a configuration with no CPU quota declares this check not applicable"
    if s.configuration.runtime == "runsc":
        seen = sandbox_gvisor.cpu_seen(s)
    else:
        seen = s.probe("cpu", processes=2, seconds=1.0)
    quota, period = seen["v1"] if seen["v2"] is None else seen["v2"].split()
    assert quota not in ("-1", "max", None), f"no CPU quota: {seen}"
    assert int(quota) / int(period) == cpus, seen  # type: ignore[arg-type]
    assert seen["cpu_s"] <= cpus * seen["wall_s"] + 0.2, seen


# -- no other team's data


def only_its_own_mounts(s: Subject) -> None:
    if s.configuration.runtime == "runsc":
        sandbox_gvisor.only_its_own_mounts(s, (*NETWORK_FILES, *DOCKER_INIT))
        return
    container_id = s.container.id
    declared = s.configuration.mounts
    for mount in s.filesystem()["mounts"]:
        target, kind, root = mount["target"], mount["type"], mount["root"]
        if target in declared and declared[target] == "bind":  # a host folder made for it
            assert root != "/" and s.bound.get(target, "\0").endswith(root), mount
        elif target in declared:
            assert kind == declared[target] and root == "/", mount
        elif target in DOCKER_OWN:
            assert kind == DOCKER_OWN[target] and root == "/", mount
        elif target in NETWORK_FILES:
            assert root.endswith(f"/containers/{container_id}/{Path(target).name}"), mount
        elif target in DOCKER_INIT:  # Docker's own init (docker-init), read-only
            assert mount["options"].startswith("ro,") and Path(root).name in INITS, mount
        elif target.startswith("/sys/fs/cgroup/"):
            assert kind in ("cgroup", "cgroup2") and container_id in root, mount
        else:  # Docker's masks over /proc and /sys: empty, read-only or /dev/null
            masked = kind in ("proc", "tmpfs") and root in ("/", "/null", target[len("/proc") :])
            assert target.startswith(("/proc/", "/sys/")) and masked, f"not its own: {mount}"


def no_docker_socket(s: Subject) -> None:
    seen = s.filesystem()
    assert not seen["known_sockets"], seen["known_sockets"]
    dirs = tuple(d.rstrip("/") + "/" for d in s.configuration.socket_dirs)
    stray = [p for p in seen["sockets"] if not p.startswith(dirs or ("\0",))]
    assert not stray, f"Unix sockets it was given: {stray}"


def no_other_teams_data(s: Subject) -> None:
    found = s.filesystem()["secret_names_found"]
    assert not found, f"sees another team's (or the host's) files: {found}"


CHECKS: dict[str, Callable[[Subject], None]] = {
    check.__name__: check
    for check in (
        no_interface_but_loopback,
        no_host_reached,
        no_capabilities,
        no_new_privileges,
        the_configured_user,
        cannot_mount,
        setuid_does_not_elevate,
        read_only_root,
        only_declared_places_writable,
        memory_limited,
        pids_limited,
        cpu_quota_holds,
        only_its_own_mounts,
        no_docker_socket,
        no_other_teams_data,
    )
}
