"""deploy/k8s: every kustomization renders, every object passes its schema, and the roles keep
the invariants docs/deploy.md promises."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.deploy.render import K8S, compose_project, k8s_problems, kustomize, operator_copy

OVERLAYS = sorted(p.name for p in (K8S / "overlays").iterdir() if p.is_dir())
QUEUES = {"build", "judge", "default", "gpu-l40s"}
JUDGE_MODEL = "podium-vllm"  # the vLLM judge (deploy/k8s/judge), in overlays/production
THIRD_PARTY = {"redis", "vllm"}


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> Path:
    return operator_copy(tmp_path_factory.mktemp("deploy"))


@pytest.fixture(scope="module", params=["base", *(f"overlays/{o}" for o in OVERLAYS)])
def rendered(request, tree) -> list[dict[str, Any]]:
    return kustomize(tree / request.param)


def of_kind(objects: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o for o in objects if o["kind"] == kind}


def pods(objects: list[dict[str, Any]]) -> Iterator[tuple[str, dict[str, Any]]]:
    for obj in objects:
        if obj["kind"] in ("Deployment", "StatefulSet", "Job"):
            yield f"{obj['kind']}/{obj['metadata']['name']}", obj["spec"]["template"]


def workers(objects: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {
        name: d
        for name, d in of_kind(objects, "Deployment").items()
        if d["spec"]["template"]["metadata"]["labels"].get("app.kubernetes.io/component")
        == "worker"
    }


def test_there_are_overlays_to_render():
    assert {"production", "staging"} <= set(OVERLAYS)


def test_every_object_passes_its_schema(rendered):
    assert {o["kind"] for o in rendered} >= {
        "Deployment", "StatefulSet", "Job", "Service", "ConfigMap", "Secret",
        "PodDisruptionBudget", "ScaledObject",
    }  # fmt: skip
    assert k8s_problems(rendered) == []


def test_the_schema_check_finds_a_broken_object(rendered):
    deployment = copy.deepcopy(next(iter(of_kind(rendered, "Deployment").values())))
    deployment["spec"]["replicas"] = "two"
    misspelt = copy.deepcopy(next(iter(of_kind(rendered, "Deployment").values())))
    misspelt["spec"]["template"]["spec"]["containers"][0]["livenessProbes"] = {}
    scaled = copy.deepcopy(next(iter(of_kind(rendered, "ScaledObject").values())))
    del scaled["spec"]["scaleTargetRef"]
    unknown = {"apiVersion": "example.org/v1", "kind": "Widget", "metadata": {"name": "w"}}
    problems = k8s_problems([deployment, misspelt, scaled, unknown])
    assert any("replicas" in p for p in problems), problems
    assert any("livenessProbes" in p for p in problems), problems
    assert any(p.startswith("ScaledObject/") and "scaleTargetRef" in p for p in problems)
    assert any(p.startswith("Widget/w: no schema") for p in problems), problems


def test_one_beat_replaced_not_rolled(rendered):
    beat = of_kind(rendered, "Deployment")["podium-beat"]
    assert beat["spec"]["replicas"] == 1
    assert beat["spec"]["strategy"] == {"type": "Recreate"}
    assert not any("podium-beat" in n for n in of_kind(rendered, "ScaledObject"))


def test_every_long_running_container_has_probes(rendered):
    for where, template in pods(rendered):
        if where.startswith("Job/"):
            continue
        for container in template["spec"]["containers"]:
            assert "livenessProbe" in container, f"{where} {container['name']}"
            assert "readinessProbe" in container, f"{where} {container['name']}"


def test_the_web_probes_are_the_health_endpoints(rendered):
    (web,) = of_kind(rendered, "Deployment")["podium-web"]["spec"]["template"]["spec"]["containers"]
    assert web["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert web["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert web["command"][:2] == ["gunicorn", "podium.wsgi:application"]
    env = {e["name"]: e["value"] for e in web["env"]}
    mounts = {m["mountPath"] for m in web["volumeMounts"]}
    assert web["securityContext"]["readOnlyRootFilesystem"] and "/tmp" in mounts
    assert env["PODIUM_VAR_DIR"].startswith("/tmp/")  # the only writable place


def test_a_worker_per_queue_scaled_by_keda_on_its_redis_list(rendered):
    found = workers(rendered)
    queues = {
        d["spec"]["template"]["metadata"]["labels"]["podium.io/queue"] for d in found.values()
    }
    assert queues == QUEUES
    scaled = {
        s["spec"]["scaleTargetRef"]["name"]: s for s in of_kind(rendered, "ScaledObject").values()
    }
    redis_service = of_kind(rendered, "Service")["podium-redis"]
    (config,) = (
        c for n, c in of_kind(rendered, "ConfigMap").items() if n.startswith("podium-config")
    )
    install = config["data"]["PODIUM_INSTALL_ID"]  # the broker's keys begin podium:<install>:
    for name, deployment in found.items():
        queue = deployment["spec"]["template"]["metadata"]["labels"]["podium.io/queue"]
        (trigger,) = scaled[name]["spec"]["triggers"]
        assert trigger["type"] == "redis"
        assert trigger["metadata"]["listName"] == f"podium:{install}:{queue}", name
        host, port = trigger["metadata"]["address"].split(":")
        assert (host, int(port)) == (redis_service["metadata"]["name"], 6379)
        (container,) = deployment["spec"]["template"]["spec"]["containers"]
        assert container["args"][:2] == ["-Q", "$(PODIUM_QUEUE)"]
        env = {e["name"]: e for e in container["env"]}
        assert env["PODIUM_QUEUE"]["valueFrom"]["fieldRef"]["fieldPath"] == (
            "metadata.labels['podium.io/queue']"
        )


def test_gpu_workers_take_one_gpu_each_on_their_class_nodes(rendered):
    gpu = {n: d for n, d in workers(rendered).items() if "gpu" in n}
    assert gpu
    for name, deployment in gpu.items():
        spec = deployment["spec"]["template"]["spec"]
        (container,) = spec["containers"]
        assert container["resources"]["limits"]["nvidia.com/gpu"] == 1, name
        assert {e["name"]: e.get("value") for e in container["env"]}["PODIUM_CONCURRENCY"] == "1"
        assert spec["nodeSelector"]["podium.io/gpu-class"] == "l40s"
        assert any(t["key"] == "nvidia.com/gpu" for t in spec["tolerations"])
    for name, deployment in of_kind(rendered, "Deployment").items():
        for container in deployment["spec"]["template"]["spec"]["containers"]:
            limits = container.get("resources", {}).get("limits", {})
            assert ("nvidia.com/gpu" in limits) == (name in gpu or name == JUDGE_MODEL), name


def _host_paths(template: dict[str, Any]) -> set[str]:
    return {v["hostPath"]["path"] for v in template["spec"].get("volumes", []) if "hostPath" in v}


def test_only_build_and_gpu_workers_reach_the_docker_engine(rendered):
    engine = {"/var/run/docker.sock", "/var/lib/docker/volumes", "/var/lib/podium"}
    engine |= {"/run/podium-build", "/var/lib/podium-build"}  # the node's build engine
    for where, template in pods(rendered):
        labels = template["metadata"]["labels"]
        queue = labels.get("podium.io/queue", "")
        if queue == "build" or queue.startswith("gpu-"):
            assert _host_paths(template) >= engine, where
            (container,) = template["spec"]["containers"]
            mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
            assert mounts["/var/lib/docker/volumes"]["mountPropagation"] == "HostToContainer"
            assert mounts["/var/lib/podium-build"]["readOnly"] is True
        else:
            assert not _host_paths(template), where


def test_the_same_images_and_settings_as_the_compose_stack(rendered):
    """Redis from the Compose stack's image with its command and probe; each queue's workers
    given the grace the Compose workers get to finish their task (a GPU worker's: 30 min)."""
    compose = compose_project()["services"]
    (redis,) = of_kind(rendered, "StatefulSet")["podium-redis"]["spec"]["template"]["spec"][
        "containers"
    ]
    assert redis["image"] == compose["redis"]["image"]
    assert redis["args"] == compose["redis"]["command"]
    assert ["CMD", *redis["readinessProbe"]["exec"]["command"]] == compose["redis"]["healthcheck"][
        "test"
    ]
    grace = {"build": "10m0s", "judge": "10m0s", "default": "10m0s", "gpu-l40s": "30m0s"}
    assert {compose[f"worker-{q.split('-')[0]}"]["stop_grace_period"] for q in grace} == {
        "10m0s",
        "30m0s",
    }
    for name, deployment in workers(rendered).items():
        queue = deployment["spec"]["template"]["metadata"]["labels"]["podium.io/queue"]
        seconds = deployment["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
        assert compose[f"worker-{queue.split('-')[0]}"]["stop_grace_period"] == grace[queue], name
        assert seconds == int(grace[queue].split("m")[0]) * 60, name


def test_disruption_budgets_cover_the_web_and_every_worker(rendered):
    budgets = [
        b["spec"]["selector"]["matchLabels"]
        for b in of_kind(rendered, "PodDisruptionBudget").values()
    ]
    for name, deployment in of_kind(rendered, "Deployment").items():
        if name == "podium-beat":
            continue
        labels = deployment["spec"]["template"]["metadata"]["labels"]
        covering = [b for b in budgets if b.items() <= labels.items()]
        assert len(covering) == 1, name


def test_keys_come_from_a_secret_and_migrations_from_a_job(rendered):
    secrets = of_kind(rendered, "Secret")
    assert len(secrets) == 1
    (secret,) = secrets
    (job,) = of_kind(rendered, "Job").values()
    (migrate,) = job["spec"]["template"]["spec"]["containers"]
    assert migrate["command"] == ["python", "manage.py", "migrate", "--noinput"]
    for where, template in pods(rendered):
        spec = template["spec"]
        for container in [*spec.get("initContainers", []), *spec["containers"]]:
            if container["name"] in THIRD_PARTY:  # servers that are not Podium: no keys
                continue
            refs = [
                e["secretRef"]["name"] for e in container.get("envFrom", []) if "secretRef" in e
            ]
            assert refs == [secret], f"{where} {container['name']}"
            if not where.startswith("Job/") and container["name"] not in THIRD_PARTY:
                assert "migrate --check" in " ".join(spec["initContainers"][0]["command"])


def test_no_pod_holds_a_kubernetes_api_token(rendered):
    for where, template in pods(rendered):
        assert template["spec"]["automountServiceAccountToken"] is False, where


def test_production_judges_with_the_vllm_judge_sized_for_the_judge_concurrency(tree):
    rendered = kustomize(tree / "overlays/production")
    deployment = of_kind(rendered, "Deployment")[JUDGE_MODEL]
    spec = deployment["spec"]["template"]["spec"]
    (vllm,) = spec["containers"]
    config = next(iter(of_kind(rendered, "ConfigMap").values()))["data"]
    service = of_kind(rendered, "Service")[JUDGE_MODEL]
    assert service["spec"]["selector"] == deployment["spec"]["selector"]["matchLabels"]
    port = service["spec"]["ports"][0]["port"]
    assert config["PODIUM_JUDGE_BASE_URL"] == f"http://{JUDGE_MODEL}:{port}/v1"
    # one GPU, on a judge node, weights mounted read-only and never downloaded
    assert vllm["resources"]["limits"]["nvidia.com/gpu"] == 1
    assert spec["nodeSelector"]["podium.io/judge"] == "true"
    assert any(t["key"] == "nvidia.com/gpu" for t in spec["tolerations"])
    (model,) = [m for m in vllm["volumeMounts"] if m["name"] == "model"]
    volume = {v["name"]: v for v in spec["volumes"]}["model"]
    assert model["readOnly"] is True and volume["persistentVolumeClaim"]["readOnly"] is True
    assert volume["persistentVolumeClaim"]["claimName"] in of_kind(
        rendered, "PersistentVolumeClaim"
    )
    args = dict(a.removeprefix("--").partition("=")[::2] for a in vllm["args"])
    env = {e["name"]: e for e in vllm["env"]}
    assert args["model"] == model["mountPath"] and env["HF_HUB_OFFLINE"]["value"] == "1"
    assert "enable-prefix-caching" in args
    assert json.loads(args["structured-outputs-config"]) == {"backend": "xgrammar"}
    # sized from podium-config, as the judge workers read it: the model's name, the slots
    for flag, key in (("served-model-name", "PODIUM_JUDGE_MODEL"),
                      ("max-num-seqs", "PODIUM_JUDGE_CONCURRENCY")):  # fmt: skip
        assert args[flag] == f"$({key})"
        assert env[key]["valueFrom"]["configMapKeyRef"]["key"] == key
    assert int(config["PODIUM_JUDGE_CONCURRENCY"]) == 64 and config["PODIUM_JUDGE_MODEL"]
    assert config["PODIUM_JUDGE_STRUCTURED"] == "vllm"  # the judge sends the verdict menu
    assert int(args["max-model-len"]) >= 2048
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        assert vllm[probe]["httpGet"]["path"] == "/health", probe
    assert env["VLLM_API_KEY"]["valueFrom"]["secretKeyRef"]["key"] == "PODIUM_JUDGE_API_KEY"
