"""The registry: the one list of benchmarks Podium knows, by the name used in scores.json, on
the CLI and in a task (``crag-mm``, ``visual-rag``, ...).

It lists, without importing them:

- each package under ``evaluator/benchmarks/`` (its name: the folder's, ``_`` read as ``-``);
- each benchmark installed as a plugin: an entry point of group ``podium.benchmarks`` naming
  the package (``toy = "toy_benchmark"``).

A benchmark's package is imported on first use only; its ``BENCHMARK`` is the class
implementing the seam (``evaluator.seam.Benchmark``), whose ``name`` must be the registered
one. Adding a benchmark is adding its package: no list to edit, no migration
(``docs/benchmark-seam.md``).
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
import sys
from importlib.metadata import entry_points
from typing import Any

from evaluator.records import EvaluatorError
from evaluator.seam import SomeBenchmark
from evaluator.seam.benchmark import Benchmark

ENTRY_POINT_GROUP = "podium.benchmarks"
# What the command-line tools read when ``--protocol`` is not given (they were CRAG-MM's first)
# and what a new task's form starts from.
DEFAULT = "crag-mm"


def _packages() -> dict[str, str]:
    """Registered name -> the module that holds the benchmark, built-ins first: read once per
    ``sys.path`` (a plugin is a distribution on it; reading every installed distribution's
    entry points takes ~20 ms, and a page asks for its benchmark several times)."""
    return dict(_packages_on(tuple(sys.path)))


@functools.lru_cache(maxsize=8)
def _packages_on(path: tuple[str, ...]) -> dict[str, str]:
    found = {
        info.name.replace("_", "-"): f"{__name__}.{info.name}"
        for info in pkgutil.iter_modules(__path__)
        if info.ispkg
    }
    for point in entry_points(group=ENTRY_POINT_GROUP):
        found.setdefault(point.name, point.value)
    return found


def names() -> tuple[str, ...]:
    """Every benchmark's name, sorted."""
    return tuple(sorted(_packages()))


def is_known(name: str) -> bool:
    """Whether a benchmark is registered as ``name``."""
    return name in _packages()


@functools.cache
def _loaded(name: str, module: str) -> type[SomeBenchmark]:
    found = getattr(importlib.import_module(module), "BENCHMARK", None)
    if not (isinstance(found, type) and issubclass(found, Benchmark)):
        raise EvaluatorError(f"benchmark {name!r}: {module}.BENCHMARK is not a Benchmark class")
    if found.name != name:
        raise EvaluatorError(f"benchmark {name!r}: {module}.BENCHMARK calls itself {found.name!r}")
    return found


def benchmark_class(name: str) -> type[SomeBenchmark]:
    """The benchmark class called ``name`` (imported now if it was not yet)."""
    packages = _packages()
    if name not in packages:
        raise EvaluatorError(
            f"benchmark {name!r}: unknown; known benchmarks: {', '.join(sorted(packages))}"
        )
    return _loaded(name, packages[name])


def get_benchmark(name: str, **settings: Any) -> SomeBenchmark:
    """The benchmark called ``name``, built with its ``settings`` (see each benchmark's class)."""
    return benchmark_class(name)(**settings)


def choices() -> list[tuple[str, str]]:
    """(name, title) of every benchmark, for a form's choice of one (imports them all)."""
    return [(name, benchmark_class(name).title) for name in names()]
