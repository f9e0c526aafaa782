"""Worker nodes simulated on one machine, for the multi-node tests and ``bench/scale_out.py``.

A node is what a GPU machine of a deployment holds: its own Docker engine (a second
``dockerd`` with its own socket, data root, exec root and pid file, no bridge, in a network
namespace of its own: agent containers have no network), its own cache directory
(``PODIUM_VAR_DIR``) and a ``celery worker`` using
only that engine (``DOCKER_HOST``) under its own ``PODIUM_NODE_ID``. Nodes share PostgreSQL,
Redis and an S3 server reached over HTTP (SeaweedFS, ``tests/seaweedfs.py``), through the same
``PODIUM_S3_*`` settings a deployment sets.

A node may be pinned to a CPU set of its own (``cpus``, as ``taskset -c`` takes it): its engine
(and so its containers, which inherit the engine's affinity) and its worker run only there, as
on a machine of its own; the shared services are not pinned.

Nothing here imports Django: the bench starts the S3 server before Django reads its settings.
Everything lives under one root directory (``/var/tmp/podium-nodes-*``, a tmpfs mounted there:
unpacking and deleting image layers on this machine's shared disk takes tens of seconds);
``Cluster.close`` stops the processes and unmounts it.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

import docker

from tests.seaweedfs import SeaweedFS

REPO = Path(__file__).resolve().parents[2]
BASE_IMAGE = "podium/agent-base:py3.11"
IMAGE_CACHE = Path("/var/tmp/podium-nodes-cache")  # the base image saved once from the main engine
QUEUES = "build,gpu-l40s,judge,default"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_until(
    what: str, check: Callable[[], bool], timeout_s: float, every_s: float = 0.2
) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout_s:.0f} s waiting for {what}")
        time.sleep(every_s)


def _stop(*processes: subprocess.Popen[bytes] | None, sig: int = signal.SIGTERM) -> None:
    """Signal every process still running, then wait for them all (killed after 30 s)."""
    running = [p for p in processes if p is not None and p.poll() is None]
    for process in running:
        process.send_signal(sig)
    for process in running:
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def pinned(command: list[str], cpus: str | None) -> list[str]:
    """``command`` run on the CPU set ``cpus`` only (``taskset -c``), or anywhere when None."""
    return ["taskset", "-c", cpus, *command] if cpus else command


class Engine:
    """A Docker engine of its own: ``dockerd`` with its socket, data and exec roots."""

    def __init__(self, root: Path, number: int, cpus: str | None = None) -> None:
        self.root = root
        self.cpus = cpus
        self.socket = Path(f"/run/podium-node-{os.getpid()}-{number}.sock")
        self.exec_root = Path(f"/run/podium-node-{os.getpid()}-{number}")  # short: socket paths
        self.url = f"unix://{self.socket}"
        self.process: subprocess.Popen[bytes] | None = None
        (root / "daemon.json").write_text("{}")  # not the machine's /etc/docker/daemon.json

    def start(self) -> None:
        # A network namespace of its own: a dockerd started with no bridge deletes "docker0",
        # which in the machine's namespace is the machine engine's bridge.
        command = [
            "unshare", "--net",
            "dockerd", "--host", self.url, "--data-root", str(self.root / "data"),
            "--exec-root", str(self.exec_root), "--pidfile", str(self.root / "dockerd.pid"),
            "--config-file", str(self.root / "daemon.json"), "--bridge", "none",
            "--iptables=false", "--ip-masq=false", "--log-level", "warn",
        ]  # fmt: skip
        with (self.root / "dockerd.log").open("ab") as log:
            self.process = subprocess.Popen(
                pinned(command, self.cpus), stdout=log, stderr=subprocess.STDOUT
            )
        wait_until(f"the engine at {self.socket}", self.answers, timeout_s=60)

    def answers(self) -> bool:
        if self.process is None or self.process.poll() is not None:
            raise RuntimeError(f"dockerd exited: {(self.root / 'dockerd.log').read_text()[-2000:]}")
        try:
            with closing(self.client()) as client:
                return bool(client.ping())
        except docker.errors.DockerException:
            return False

    def client(self) -> docker.DockerClient:
        return docker.DockerClient(base_url=self.url, timeout=120)

    def stop(self) -> None:
        """Stop the engine as a machine's shutdown does: its containers stop, and stay."""
        _stop(self.process)
        self.process = None

    def load_base_image(self) -> None:
        """The agent base image (what builds start from), saved once from the main engine."""
        main = docker.from_env()
        try:
            image_id = main.images.get(BASE_IMAGE).id
        finally:
            main.close()
        IMAGE_CACHE.mkdir(parents=True, exist_ok=True)
        archive = IMAGE_CACHE / f"agent-base-{image_id.removeprefix('sha256:')[:16]}.tar"
        if not archive.exists():
            partial = archive.with_suffix(f".{os.getpid()}.part")
            with partial.open("wb") as out:
                subprocess.run(["docker", "save", BASE_IMAGE], stdout=out, check=True)
            partial.rename(archive)
        with closing(self.client()) as client, archive.open("rb") as handle:
            client.images.load(handle)


class Node:
    """One worker node: its engine, its cache directory and its ``celery worker``, on the CPU
    set ``cpus`` only when given."""

    def __init__(self, root: Path, number: int, name: str, cpus: str | None = None) -> None:
        self.name = name
        self.root = root
        self.cpus = cpus
        root.mkdir(parents=True, exist_ok=True)
        self.engine = Engine(root, number, cpus)
        self.worker: subprocess.Popen[bytes] | None = None
        self.started_at = 0  # where the log of the worker started last begins

    @property
    def log_path(self) -> Path:
        return self.root / "worker.log"

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def start_worker(self, env: dict[str, str], queues: str = QUEUES) -> None:
        """``celery worker`` (solo pool: a SIGKILL ends the task with it) on this node."""
        command = [
            sys.executable, "-m", "celery", "-A", "podium", "worker", "--pool=solo",
            "-Q", queues, "-n", f"{self.name}@%h", "--without-gossip", "--without-mingle",
            "-l", "info",
        ]  # fmt: skip
        node_env = {
            **env,
            "DOCKER_HOST": self.engine.url,
            "PODIUM_NODE_ID": self.name,
            "PODIUM_VAR_DIR": str(self.root / "var"),
        }
        self.started_at = self.log_path.stat().st_size if self.log_path.exists() else 0
        with self.log_path.open("ab") as log:
            self.worker = subprocess.Popen(
                pinned(command, self.cpus),
                cwd=REPO,
                env=node_env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )

    def wait_ready(self, timeout_s: float = 120) -> None:
        """Until the worker started last says it is ready to take tasks."""
        wait_until(
            f"{self.name}'s worker", lambda: " ready." in self.log()[self.started_at :], timeout_s
        )

    def kill(self) -> None:
        """The machine lost: its worker SIGKILLed, its engine stopped."""
        _stop(self.worker, sig=signal.SIGKILL)
        self.worker = None
        self.engine.stop()

    def stop_worker(self) -> None:
        _stop(self.worker)
        self.worker = None


class Cluster:
    """Nodes under ``root`` sharing the database, the broker and one S3 server (``s3``, its
    bucket ``bucket``).

    ``env``: what every Podium process of the cluster needs (``DATABASE_URL``, ``REDIS_URL``
    and the like), the S3 settings (``s3_env``) added here."""

    def __init__(self, root: Path, env: dict[str, str]) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=8g", "podium-nodes", str(root)], check=True
        )
        self.s3 = SeaweedFS(root)
        self.s3.start()
        self.bucket = self.s3.create_bucket("podium")
        self.s3_env = self.s3.env(self.bucket)
        self.env = {**os.environ, **env, **self.s3_env, "PYTHONUNBUFFERED": "1"}
        self.env.pop("DOCKER_HOST", None)
        self.nodes: list[Node] = []
        self.beat: subprocess.Popen[bytes] | None = None

    def add_node(
        self, name: str, *, base_image: bool = True, start: bool = True, cpus: str | None = None
    ) -> Node:
        """A node with its engine started (the agent base image loaded when ``base_image``,
        as on a node that builds) and, when ``start``, its worker; on ``cpus`` when given."""
        node = Node(self.root / name, len(self.nodes), name, cpus)
        self.nodes.append(node)
        node.engine.start()
        if base_image:
            node.engine.load_base_image()
        if start:
            node.start_worker(self.env)
        return node

    def start_beat(self, **env: str) -> None:
        """``celery beat`` (the reaper) on none of the nodes, as on a deployment's web node."""
        command = [
            sys.executable, "-m", "celery", "-A", "podium", "beat", "-l", "info",
            "-s", str(self.root / "beat-schedule"),
        ]  # fmt: skip
        with (self.root / "beat.log").open("ab") as log:
            self.beat = subprocess.Popen(
                command, cwd=REPO, env={**self.env, **env}, stdout=log, stderr=subprocess.STDOUT
            )

    def stored(self, prefix: str = "") -> list[str]:
        """The keys in the cluster's bucket under ``prefix``."""
        return self.s3.keys(self.bucket, prefix)

    def logs(self) -> str:
        parts = [f"{node.name}:\n{node.log()[-3000:]}" for node in self.nodes]
        beat = self.root / "beat.log"
        if beat.exists():
            parts.append("beat:\n" + beat.read_text(errors="replace")[-1500:])
        return "\n".join(parts)

    def close(self) -> None:
        _stop(*(node.worker for node in self.nodes), self.beat)
        _stop(*(node.engine.process for node in self.nodes))
        self.s3.close()
        for node in self.nodes:
            shutil.rmtree(node.engine.exec_root, ignore_errors=True)
        subprocess.run(["umount", "--lazy", str(self.root)], check=True)
        self.root.rmdir()


def image_events(node: Node, since: float) -> list[str]:
    """The actions of the node engine's image events since ``since`` (load, pull, tag...)."""
    with closing(node.engine.client()) as client:
        events = client.events(
            since=int(since), until=int(time.time()) + 1, filters={"type": "image"}, decode=True
        )
        return [str(event.get("Action", "")) for event in events]
