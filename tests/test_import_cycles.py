"""No import cycle among Podium's modules: imports inside functions count (an import put in a
function to dodge a circle is still a circle), those under ``if TYPE_CHECKING:`` do not (they
never run). A package importing its own submodules (its ``__init__``'s re-exports) is a cycle
only when a submodule imports the package back."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import grimp
import pytest

REPO = Path(__file__).resolve().parents[1]
# scripts/shape.py finds the cycles (Tarjan's strongly connected components) for the figures;
# its package_cycles drops a package's imports of its submodules, so would miss one imported back
_spec = importlib.util.spec_from_file_location("shape", REPO / "scripts" / "shape.py")
assert _spec is not None and _spec.loader is not None
shape = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(shape)

PACKAGES = ("agentkit", "evaluator", "workers", "leaderboard", "podium")


@pytest.fixture(autouse=True)
def _importable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(REPO))


def test_no_import_cycle() -> None:
    graph = grimp.build_graph(*PACKAGES, cache_dir=None, exclude_type_checking_imports=True)
    found = shape.cycles(graph)
    assert not found, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in found)


def _graph(*imports: tuple[str, str]) -> grimp.ImportGraph:
    graph = grimp.ImportGraph()
    for importer, imported in imports:
        graph.add_import(importer=importer, imported=imported)
    return graph


def test_a_cycle_is_found_however_long_and_a_package_importing_its_submodules_is_none() -> None:
    a, b, c = "evaluator.report", "evaluator.notices", "evaluator.cli"
    assert shape.cycles(_graph((a, b), (b, c), (c, a), (c, "evaluator.records"))) == [
        sorted((a, b, c))
    ]
    package, seam = "evaluator.seam", "evaluator.seam.samples"
    assert shape.cycles(_graph((package, seam), (package, "evaluator.seam.pages"))) == []
    back = _graph((package, seam), (seam, package))  # a submodule importing its package back
    assert shape.cycles(back) == [[package, seam]]
