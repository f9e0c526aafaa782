"""Sandbox conformance: one set of checks (``sandbox_checks.CHECKS``: no network, no privileges,
a read-only root, limits that hold, no other team's data), run in real containers on a real
engine against every configuration Podium runs a team's code in, started exactly as Podium
starts it (``workers.hardening`` and each caller's own arguments). A configuration declares
the checks that do not apply to it, with the reason; every other check runs. A new runtime
is accepted by passing them: add it to ``SANDBOX_RUNTIMES``.

So that no check passes for want of looking, each one is also run on containers lacking the
protection it checks (``CONTROLS``), where it must fail. One container per configuration
serves all its checks (``docker exec``): about 20 s in all. The two declaration checks at the
end need no Docker engine.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import socket
import struct
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agentkit.protocol import IMAGE_DIR, SOCKET_DIR
from tests import required
from tests.workers.conftest import TEST_POLICY
from tests.workers.sandbox_checks import CHECKS, SETUID_BINARY, Configuration, Subject
from workers.build_engine import session as build_session
from workers.build_notices import CHECK_MEMORY_BYTES, CHECK_PIDS, check_container
from workers.hardening import hardened
from workers.model_store import MODEL_DIR
from workers.package_index import GATE_DIR, GATE_MEMORY_BYTES, GATE_PIDS, gate_container
from workers.runtimes import check, offered
from workers.sandbox import MiB

# The runtimes agent containers run under (``workers.runtimes``), each accepted by passing every
# check; under runsc (gVisor) some read gVisor's view where runc's does not apply (its /proc has
# no NoNewPrivs nor CapAmb, no cgroup files, 9p mounts, namespaces of its own kernel; the pids
# limit bounds its host threads): docs/security.md, "Agent runtime: gVisor". A runtime the
# engine lacks is unavailable (skipped here, failed in CI, whose engine registers runsc).
SANDBOX_RUNTIMES = ("runc", "runsc")
SANDBOX_POLICY = dataclasses.replace(TEST_POLICY, cpus=0.5)  # a quota below one CPU: measurable
KEEP_ALIVE = "import time; time.sleep(600)"
NO_CPU_QUOTA = "no CPU quota is configured: its time is bounded instead"


@dataclasses.dataclass(frozen=True)
class Setup:
    client: Any  # the engine's DockerClient
    image: str  # the team's image: the base image and a setuid-root binary
    stack: contextlib.ExitStack
    folder: Path  # a fresh host folder for this container
    others: tuple[str, str]  # another team's volume, a host folder holding a secret file


Start = Callable[[Setup], tuple[Any, dict[str, str]]]  # the container, host folders bound


def _started(setup: Setup, **kwargs: Any) -> Any:
    """``containers.run(detach=True)``, its two steps apart: removed even if it fails to start."""
    container = setup.client.containers.create(**kwargs)
    setup.stack.callback(container.remove, force=True)
    container.start()
    return container


def agent_sandbox(runtime: str) -> Start:
    def start(setup: Setup) -> tuple[Any, dict[str, str]]:
        if runtime not in offered(setup.client):
            required.unavailable(f"the engine does not offer the {runtime} runtime")
        policy = dataclasses.replace(SANDBOX_POLICY, runtime=check(runtime))
        client, run_id = setup.client, f"conformance-{uuid.uuid4().hex}"
        volumes = [
            policy.create_socket_volume(client, run_id, setup.image),
            policy.create_image_volume(client, run_id, setup.image, 1 * MiB),
        ]
        for volume in volumes:
            setup.stack.callback(volume.remove, force=True)
        kwargs = policy.container_kwargs(
            setup.image, "multi-turn-qa", volumes[0].name, volumes[1].name, run_id
        )
        kwargs.update(entrypoint=["python3", "-c", KEEP_ALIVE], runtime=runtime)
        container = _started(setup, **kwargs)
        container.reload()
        assert container.attrs["HostConfig"]["Runtime"] == runtime
        return container, {}

    return start


def notice_check(setup: Setup) -> tuple[Any, dict[str, str]]:
    kwargs = {**check_container(setup.image), "command": ["-c", KEEP_ALIVE]}
    return _started(setup, **kwargs), {}


def index_gate(setup: Setup) -> tuple[Any, dict[str, str]]:
    setup.folder.chmod(0o755)  # as index_gate makes it; its relay runs as Podium runs it
    container = _started(setup, **gate_container(setup.image, setup.folder))
    return container, {GATE_DIR: str(setup.folder)}


def unhardened(setup: Setup) -> tuple[Any, dict[str, str]]:
    """Docker's defaults, as root, on the bridge network, free to mount: the control."""
    container = _started(
        setup, image=setup.image, entrypoint=["python3", "-c", KEEP_ALIVE], user="0",
        cap_add=["SYS_ADMIN"], security_opt=["seccomp=unconfined"],
    )  # fmt: skip
    return container, {}


def exposed(setup: Setup) -> tuple[Any, dict[str, str]]:
    """The hardening without no-new-privileges, given the engine's socket, another team's
    volume and a host folder: the control."""
    volume, folder = setup.others
    kwargs = {
        **hardened(memory_bytes=SANDBOX_POLICY.memory_bytes, pids_limit=SANDBOX_POLICY.pids_limit),
        "security_opt": [],
        "volumes": {
            "/var/run/docker.sock": {"bind": "/var/run/docker.sock", "mode": "ro"},
            volume: {"bind": "/mnt/other-team", "mode": "ro"},
            folder: {"bind": "/mnt/host", "mode": "ro"},
        },
    }
    container = _started(
        setup, image=setup.image, entrypoint=["python3", "-c", KEEP_ALIVE], **kwargs
    )
    return container, {}


SANDBOX = {
    "memory_bytes": SANDBOX_POLICY.memory_bytes,
    "pids_limit": SANDBOX_POLICY.pids_limit,
    "cpus": SANDBOX_POLICY.cpus,
    "mounts": {"/tmp": "tmpfs", MODEL_DIR: "tmpfs", SOCKET_DIR: "tmpfs", IMAGE_DIR: "tmpfs"},
    "writable": ("/tmp", MODEL_DIR, SOCKET_DIR),
    "socket_dirs": (SOCKET_DIR,),
}
CONFIGURATIONS = [
    *(Configuration(f"agent-sandbox-{r}", "node", **SANDBOX, runtime=r) for r in SANDBOX_RUNTIMES),
    # on the build engine, as Podium runs them (workers.builds)
    Configuration(
        "build-notice-check", "build", CHECK_MEMORY_BYTES, CHECK_PIDS, None,
        not_applicable={"cpu_quota_holds": f"{NO_CPU_QUOTA} (NOTICE_CHECK_S)"},
    ),
    Configuration(
        "package-index-gate", "build", GATE_MEMORY_BYTES, GATE_PIDS, None,
        mounts={GATE_DIR: "bind"}, socket_dirs=(GATE_DIR,),
        not_applicable={"cpu_quota_holds": f"{NO_CPU_QUOTA} (one build's length)"},
    ),
]  # fmt: skip
STARTS: dict[str, Start] = {
    **{f"agent-sandbox-{r}": agent_sandbox(r) for r in SANDBOX_RUNTIMES},
    "build-notice-check": notice_check,
    "package-index-gate": index_gate,
    "control-unhardened": unhardened,
    "control-exposed": exposed,
}
CONTROLS = [
    Configuration(
        "control-unhardened", "node", **SANDBOX,
        shows_failing=frozenset({
            "no_interface_but_loopback", "no_host_reached", "no_capabilities",
            "no_new_privileges", "the_configured_user", "cannot_mount",
            "setuid_does_not_elevate", "read_only_root", "only_declared_places_writable",
            "memory_limited", "pids_limited", "cpu_quota_holds",
        }),
    ),
    Configuration(
        "control-exposed", "node", **SANDBOX,
        shows_failing=frozenset({
            "no_new_privileges", "setuid_does_not_elevate", "only_its_own_mounts",
            "no_docker_socket", "no_other_teams_data",
        }),
    ),
]  # fmt: skip


def _cases(configurations: list[Configuration]) -> list[Any]:
    return [
        pytest.param(configuration, check, id=f"{configuration.name}:{check}")
        for configuration in configurations
        for check in configuration.checks
    ]


@contextlib.contextmanager
def _with_setuid_binary(client: Any, base: str) -> Iterator[str]:
    """``base`` with a setuid-root copy of ``id`` (as a team's image may carry one)."""
    script = f"cp /usr/bin/id {SETUID_BINARY} && chmod 4755 {SETUID_BINARY}"
    maker = client.containers.run(
        base, ["-c", script], entrypoint="sh", user="0", network_mode="none", detach=True
    )
    try:
        assert maker.wait(timeout=60)["StatusCode"] == 0, maker.logs()
        config = client.images.get(base).attrs["Config"]
        image = maker.commit(conf={"User": config["User"], "Entrypoint": config["Entrypoint"]})
    finally:
        maker.remove(force=True)
    try:
        yield image.id
    finally:
        client.images.remove(image.id, force=True)


@contextlib.contextmanager
def _other_teams_volume(client: Any, base: str, secret: str) -> Iterator[str]:
    """A volume on this engine holding a file named ``secret``: another team's."""
    volume = client.volumes.create(f"podium-conformance-other-{uuid.uuid4().hex[:12]}")
    try:
        client.containers.run(
            base, ["-c", f"echo private > /v/{secret}"], entrypoint="sh", user="0",
            network_mode="none", volumes={volume.name: {"bind": "/v", "mode": "rw"}}, remove=True,
        )  # fmt: skip
        yield volume.name
    finally:
        volume.remove(force=True)


def _host_addresses() -> tuple[str, ...]:
    """This host's IPv4 addresses but loopback (the engine's bridge gateway among them)."""
    found = []
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        for _, name in socket.if_nameindex():
            with contextlib.suppress(OSError):  # SIOCGIFADDR: an interface with no IPv4 address
                packed = struct.pack("256s", name.encode()[:15])
                address = socket.inet_ntoa(fcntl.ioctl(probe.fileno(), 0x8915, packed)[20:24])
                if not address.startswith("127."):
                    found.append(address)
    return tuple(found)


@pytest.fixture(scope="module")
def listening_port() -> Iterator[int]:
    """A TCP port on every address of this host, accepting any connection."""
    server = socket.create_server(("0.0.0.0", 0))
    server.settimeout(0.2)
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            with contextlib.suppress(OSError):
                server.accept()[0].close()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join()
    server.close()


@pytest.fixture(scope="module")
def subjects(
    docker_client, build_engine, base_image, listening_port, tmp_path_factory
) -> Iterator[Callable[[Configuration], Subject]]:
    """The running container of a configuration: started when first asked for, removed when
    another configuration is (its tests come one after another) or the module ends."""
    addresses = _host_addresses()
    assert addresses, "this host has no address to try"
    secrets = (f"other-team-{uuid.uuid4().hex}", f"host-secret-{uuid.uuid4().hex}")
    host_folder = tmp_path_factory.mktemp("host")
    host_folder.chmod(0o755)  # readable by anyone who has it mounted
    (host_folder / secrets[1]).write_text("the host's")
    running: list[Subject] = []
    stack = contextlib.ExitStack()

    def start(configuration: Configuration) -> Subject:
        client = docker_client
        if configuration.engine == "build":  # locked and emptied, as for a build
            client = stack.enter_context(build_session([base_image], docker_client)).client
        image = stack.enter_context(_with_setuid_binary(client, base_image))
        volume = stack.enter_context(_other_teams_volume(client, base_image, secrets[0]))
        folder = tmp_path_factory.mktemp(configuration.name)
        setup = Setup(client, image, stack, folder, (volume, str(host_folder)))
        container, bound = STARTS[configuration.name](setup)
        return Subject(configuration, container, secrets, addresses, listening_port, bound)

    def subject(configuration: Configuration) -> Subject:
        if running and running[0].configuration is configuration:
            running[0].container.reload()  # under gVisor the pids check ends the sandbox
            if running[0].container.status != "running":
                running.clear()
        if not running or running[0].configuration is not configuration:
            running.clear()
            stack.close()
            running.append(start(configuration))
        return running[0]

    with stack:
        yield subject


@pytest.mark.docker
@pytest.mark.parametrize(("configuration", "check"), _cases(CONFIGURATIONS))
def test_the_configuration_passes_the_check(subjects, configuration, check) -> None:
    CHECKS[check](subjects(configuration))


@pytest.mark.docker
@pytest.mark.parametrize(("configuration", "check"), _cases(CONTROLS))
def test_the_check_fails_without_the_protection(subjects, configuration, check) -> None:
    with pytest.raises(AssertionError):
        CHECKS[check](subjects(configuration))


def test_every_configuration_runs_every_check_it_does_not_declare_inapplicable() -> None:
    for configuration in CONFIGURATIONS:
        skipped = set(CHECKS) - set(configuration.checks)
        assert skipped == set(configuration.not_applicable), configuration.name
        assert all(why.strip() for why in configuration.not_applicable.values())
    assert {c.name for c in CONFIGURATIONS} | {c.name for c in CONTROLS} == set(STARTS)


def test_every_check_is_seen_to_fail_on_some_control() -> None:
    shown = set().union(*(control.shows_failing for control in CONTROLS))
    assert shown == set(CHECKS)
