"""One Compose project of ``deploy/compose.yaml`` with ``deploy/compose.cpu.yaml`` for a test
(``test_compose_stack.py``): its images built or found, its settings in an env file of its own
(``deploy/.env.example`` with the test's values), ``docker compose`` run on it with nothing of
the test process's environment but PATH, HOME and DOCKER_*, and everything it made removed at
the end; ``Follow`` keeps a container's log until the container is gone."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.deploy.render import COMPOSE, COMPOSE_CPU, ENV_EXAMPLE, REPO, docker_compose

LIST_BUCKET = """
import json, os, boto3
s3 = boto3.client("s3", endpoint_url=os.environ["PODIUM_S3_ENDPOINT_URL"],
    region_name=os.environ["PODIUM_S3_REGION"],
    aws_access_key_id=os.environ["PODIUM_S3_ACCESS_KEY_ID"],
    aws_secret_access_key=os.environ["PODIUM_S3_SECRET_ACCESS_KEY"])
pages = s3.get_paginator("list_objects_v2").paginate(Bucket=os.environ["PODIUM_S3_BUCKET"])
found = [[o["Key"], o["Size"], o["ETag"]] for p in pages for o in p.get("Contents", [])]
print(json.dumps(sorted(found)))
"""


def build(script: str) -> list[str]:
    """What a build script printed (the images it built or found)."""
    done = subprocess.run(["bash", str(REPO / script)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.fail(f"{script} failed:\n{done.stderr[-4000:]}")
    return done.stdout.split()


def built_images() -> str:
    """Podium's image (its name), the services' images and the agent base, built or found."""
    started = time.monotonic()
    (podium,) = build("deploy/images/build.sh")
    services = build("deploy/images/build-services.sh")
    build("deploy/agent-base/build.sh")
    print(f"\nimages built or found in {time.monotonic() - started:.0f} s: {podium} {services}")
    return podium


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Stack:
    """One Compose project of deploy/compose.yaml + compose.cpu.yaml, its settings in an env
    file of its own (deploy/.env.example with this test's values)."""

    def __init__(self, tmp: Path, image: str) -> None:
        self.project = f"podium-e2e-{os.getpid()}"
        self.port = free_port()
        self.site = f"http://127.0.0.1:{self.port}"
        self.var_dir = tmp / "host-var"  # PODIUM_HOST_VAR_DIR: the engine workers' files
        (self.var_dir / "tmp").mkdir(parents=True)
        self.env_file = tmp / "stack.env"
        self.images: list[str] = []  # made for this test: removed after the stack
        self.settings = {
            "PODIUM_IMAGE": image,
            "PODIUM_INSTALL_ID": self.project,  # its agent containers' podium.site label
            "SECRET_KEY": "compose-e2e-" + "k" * 40,
            "ALLOWED_HOSTS": "127.0.0.1,localhost",
            "CSRF_TRUSTED_ORIGINS": "",
            "PODIUM_HTTPS": "0",
            "PODIUM_PROXY_COUNT": "0",
            "PODIUM_WEB_PORT": str(self.port),
            "PODIUM_WEB_WORKERS": "2",
            "POSTGRES_PASSWORD": "compose-e2e-db",
            "S3_ACCESS_KEY": "compose-e2e",
            "S3_SECRET_KEY": "compose-e2e-secret",
            "PODIUM_HOST_VAR_DIR": str(self.var_dir),
            "PODIUM_GPU_CLASSES": "cpu",
            "PODIUM_GPU_CLASS": "cpu",
            "PODIUM_IMAGE_STORE": "never",  # one host: no image needs the bucket
            "PODIUM_EMAIL_BACKEND": "",
        }
        self.write_env()

    def write_env(self, **changes: str) -> None:
        self.settings |= changes
        lines = [
            line
            for line in ENV_EXAMPLE.read_text().splitlines()
            if line.split("=", 1)[0] not in self.settings
        ]
        self.env_file.write_text(
            "\n".join([*lines, *(f"{k}={v}" for k, v in self.settings.items())]) + "\n"
        )

    def run(self, *args: str, timeout_s: float) -> subprocess.CompletedProcess[str]:
        """``docker compose`` on this project, reading the env file only: the test process's
        own environment (its PODIUM_* settings) would win over the file."""
        command = [
            docker_compose(), "-p", self.project, "-f", str(COMPOSE), "-f", str(COMPOSE_CPU),
            "--env-file", str(self.env_file), *args,
        ]  # fmt: skip
        env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME") or k[:7] == "DOCKER_"}
        return subprocess.run(command, capture_output=True, text=True, timeout=timeout_s, env=env)

    def compose(self, *args: str, timeout_s: float = 600, check: bool = True) -> str:
        done = self.run(*args, timeout_s=timeout_s)
        if check and done.returncode != 0:
            pytest.fail(f"docker compose {' '.join(args)}: {done.stderr[-3000:]}\n{self.logs()}")
        return done.stdout

    def up(self) -> float:
        started = time.monotonic()
        self.compose("up", "-d", "--pull", "never", "--quiet-pull")
        self.wait_ready()
        return time.monotonic() - started

    def wait_ready(self, timeout_s: float = 180) -> None:
        wait_for(f"{self.site}/readyz", lambda: _get(f"{self.site}/readyz") == 200, timeout_s, self)

    def running(self) -> set[str]:
        return set(self.compose("ps", "--services", "--status", "running").split())

    def container(self, service: str) -> dict[str, Any]:
        (cid,) = self.compose("ps", "-a", "-q", service).split()
        done = subprocess.run(["docker", "inspect", cid], capture_output=True, text=True)
        return json.loads(done.stdout)[0]

    def exec_python(self, service: str, *command: str) -> str:
        return self.compose("exec", "-T", service, "python", *command, timeout_s=180)

    def logs(self) -> str:
        return self.run("logs", "--no-color", "--tail", "40", timeout_s=120).stdout[-12000:]

    def remove(self) -> None:
        """Everything the project made (containers, network, volumes) and the agent
        containers and volumes its workers started on the engine (labelled with its install)."""
        self.compose("down", "-v", "--remove-orphans", "-t", "20", check=False)
        label = f"label=podium.site={self.project}"
        for kind in ("container", "volume"):
            listed = subprocess.run(
                ["docker", kind, "ls", "-q", *(["-a"] if kind == "container" else []),
                 "--filter", label],
                capture_output=True, text=True,
            ).stdout.split()  # fmt: skip
            if listed:
                subprocess.run(["docker", kind, "rm", "-f", *listed], capture_output=True)
        for image in self.images:
            subprocess.run(["docker", "image", "rm", "-f", image], capture_output=True)


def _get(url: str, **kw: Any) -> int:
    try:
        return httpx.get(url, timeout=10, **kw).status_code
    except httpx.HTTPError:
        return 0


def wait_for(what: str, done: Callable[[], bool], timeout_s: float, stack: Stack) -> None:
    deadline = time.monotonic() + timeout_s
    while not done():
        if time.monotonic() > deadline:
            pytest.fail(f"{what}: not within {timeout_s:.0f} s\n{stack.logs()}")
        time.sleep(1)


def bucket_objects(stack: Stack) -> list[list[Any]]:
    return list(json.loads(stack.exec_python("worker-default", "-c", LIST_BUCKET)))


class Follow:
    """``docker logs -f`` of one container into memory until it is removed."""

    def __init__(self, container_id: str) -> None:
        self.lines: list[str] = []
        self.process = subprocess.Popen(
            ["docker", "logs", "-f", "--timestamps", container_id],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line)

    def close(self) -> list[str]:
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
        self.thread.join(timeout=10)
        return self.lines
