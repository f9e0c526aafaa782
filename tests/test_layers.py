"""The layers (docs/internals.md): the compute engine (``workers/``) runs without Django, and the
import contracts ``lint-imports`` checks in CI (pyproject.toml) refuse an import across them."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"

# Imports the engine's entry points with Django, the Django app and the project refused.
ENGINE_WITHOUT_DJANGO = """
import sys

class Refused:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in {"django", "leaderboard", "podium"}:
            raise ImportError(f"the engine imported {name}")

sys.meta_path.insert(0, Refused())
import workers.builds, workers.cli, workers.faults, workers.janitor, workers.runner
import workers.search.service
print("imported")
"""


def test_the_engine_imports_without_django():
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    done = subprocess.run(
        [sys.executable, "-c", ENGINE_WITHOUT_DJANGO],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["imported"]


def _project(root: Path, files: dict[str, str]) -> subprocess.CompletedProcess:
    """``lint-imports`` with this repository's contracts over a project of ``files`` (every
    root package present, empty unless given)."""
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    for package in contracts["root_packages"]:
        (root / package).mkdir(parents=True)
        (root / package / "__init__.py").write_text("")
    for contract in contracts["contracts"]:  # modules the contracts name: there, empty
        for module in (*contract["source_modules"], *contract["forbidden_modules"]):
            if "." in module:
                (root / (module.replace(".", "/") + ".py")).write_text("")
    for name, text in files.items():
        (root / name).write_text(text)
    (root / "pyproject.toml").write_text((ROOT / "pyproject.toml").read_text())
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", "--no-logo"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_an_import_across_the_layers_fails_the_check(tmp_path):
    downward = {
        "leaderboard/stage.py": "import django\nimport workers.runner\n",
        "workers/runner.py": "import evaluator\n",
        "podium/settings.py": "from workers import runner\n",
    }
    kept = _project(tmp_path / "kept", downward)
    assert kept.returncode == 0, kept.stdout

    upward = {
        **downward,
        # inside a function too: where the old circles hid their imports
        "workers/runner.py": "def stage():\n    from django.db import connection\n",
        "workers/claims.py": "import leaderboard.stage\n",
        "evaluator/cli.py": "import workers.runner\n",
        "agentkit/serve.py": "import podium.settings\n",
        "leaderboard/models.py": "def rank():\n    from leaderboard import board_store\n",
        "podium/urls.py": "from leaderboard.monitoring import metrics_view\n",
    }
    broken = _project(tmp_path / "broken", upward)
    assert broken.returncode != 0
    for arrow in (
        "workers is not allowed to import django",
        "workers is not allowed to import leaderboard",
        "evaluator is not allowed to import workers",
        "agentkit is not allowed to import podium",
        "leaderboard.models is not allowed to import leaderboard.board_store",
        "podium is not allowed to import leaderboard",
    ):
        assert arrow in broken.stdout, broken.stdout
