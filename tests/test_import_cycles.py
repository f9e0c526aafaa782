"""No import cycle among Podium's modules: imports inside functions count (an import put in a
function to dodge a circle is still a circle), those under ``if TYPE_CHECKING:`` do not (they
never run). A package importing its own submodules (its ``__init__``'s re-exports) is a cycle
only when a submodule imports the package back."""

from __future__ import annotations

from collections.abc import Iterable

import grimp

PACKAGES = ("agentkit", "evaluator", "workers", "leaderboard", "podium")
# Being broken (issue #33, on another branch): the lead removes this allow-list at merge. A
# cycle all of whose modules are (or are under) one group's is let through.
KNOWN = (
    ("leaderboard.models", "leaderboard.board_store", "leaderboard.ranking", "leaderboard.slices"),
    ("leaderboard.audits", "leaderboard.audit_results"),
)


def cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """The strongly connected components of more than one module (each holds a cycle), their
    modules sorted (Tarjan's algorithm, iterative)."""
    modules = sorted(graph.modules)
    edges = {m: sorted(graph.find_modules_directly_imported_by(m)) for m in modules}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in modules:
        if root in index:
            continue
        work = [(root, iter(edges[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            module, targets = work[-1]
            target = next(targets, None)
            if target is not None:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(edges.get(target, ()))))
                elif target in on_stack:
                    low[module] = min(low[module], index[target])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[module])
            if low[module] == index[module]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == module:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def _within(module: str, group: Iterable[str]) -> bool:
    return any(module == name or module.startswith(name + ".") for name in group)


def _known(component: list[str]) -> bool:
    return any(all(_within(m, group) for m in component) for group in KNOWN)


def test_no_import_cycle() -> None:
    graph = grimp.build_graph(*PACKAGES, cache_dir=None, exclude_type_checking_imports=True)
    found = [c for c in cycles(graph) if not _known(c)]
    assert not found, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in found)


def _graph(*imports: tuple[str, str]) -> grimp.ImportGraph:
    graph = grimp.ImportGraph()
    for importer, imported in imports:
        graph.add_import(importer=importer, imported=imported)
    return graph


def test_a_cycle_is_found_however_long_and_a_package_importing_its_submodules_is_none() -> None:
    assert cycles(_graph(("p.a", "p.b"), ("p.b", "p.c"), ("p.c", "p.a"), ("p.c", "q"))) == [
        ["p.a", "p.b", "p.c"]
    ]
    assert cycles(_graph(("p", "p.a"), ("p", "p.b"), ("p.a", "p.b"))) == []
    assert cycles(_graph(("p", "p.a"), ("p.a", "p"))) == [["p", "p.a"]]  # imported back
    assert not _known(["leaderboard.audits", "leaderboard.ranking"])  # across two groups
