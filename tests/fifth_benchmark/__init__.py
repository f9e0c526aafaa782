"""A fifth benchmark, installed as a plugin would be (issue #33: the seam's proof).

``plugin/`` plays an installed package's site directory: it holds ``podium_toy``, the toy
benchmark (capitals, graded by exact match). ``install`` writes the distribution's metadata
(``podium_toy-0.1.dist-info/entry_points.txt``: ``[podium.benchmarks] toy = podium_toy``) into
a directory and puts both on ``sys.path``, so the registry (``evaluator.benchmarks``) lists
``toy`` with no edit of Podium. Processes started meanwhile (Celery workers, the CLI) see it
through ``PYTHONPATH`` (``install(...).pythonpath``). ``agent/`` answers it (kit A)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
PLUGIN = HERE / "plugin"
AGENT = HERE / "agent"
NAME = "toy"


def write_distribution(root: Path, points: dict[str, str], dist: str = "podium_toy") -> Path:
    """``root/<dist>-0.1.dist-info`` declaring ``points`` (name -> module) in the group
    ``podium.benchmarks``, as ``pip install`` would leave it; returns ``root``."""
    info = root / f"{dist}-0.1.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
    lines = "".join(f"{name} = {module}\n" for name, module in points.items())
    (info / "entry_points.txt").write_text(f"[podium.benchmarks]\n{lines}")
    return root


@dataclass(frozen=True)
class Installed:
    paths: tuple[str, ...]

    @property
    def pythonpath(self) -> str:
        """``PYTHONPATH`` for a subprocess that must see the plugin too."""
        return os.pathsep.join([*self.paths, os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)


@contextmanager
def install(root: Path, points: dict[str, str] | None = None) -> Iterator[Installed]:
    """The toy (or ``points``) installed in ``root`` and on ``sys.path`` until the end."""
    found = Installed((str(PLUGIN), str(write_distribution(root, points or {NAME: "podium_toy"}))))
    with pytest.MonkeyPatch.context() as patch:
        for path in reversed(found.paths):
            patch.syspath_prepend(path)
        yield found
