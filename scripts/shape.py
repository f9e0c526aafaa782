"""The code's shape, measured from its imports (those inside functions included): files per
top-level package, import arrows between packages in each direction, import cycles, and the
benchmark seam's interfaces with their method counts.

    .venv/bin/python scripts/shape.py

Used for the redesign's before/after figures (docs/internals.md, "Layers").
"""

from __future__ import annotations

import ast
import sys
from collections import Counter
from pathlib import Path

import grimp

PACKAGES = ("agentkit", "evaluator", "workers", "leaderboard", "podium")


def cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append(
                        (child, iter(sorted(graph.find_modules_directly_imported_by(child))))
                    )
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def package_cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Cycles other than a package's ``__init__`` re-exporting its own submodules (an import
    of the package by one of its submodules is kept: that one is a real cycle)."""
    reexports = [
        (importer, imported)
        for importer in graph.modules
        for imported in graph.find_modules_directly_imported_by(importer)
        if imported.startswith(importer + ".") and _is_package(importer)
    ]
    for importer, imported in reexports:
        graph.remove_import(importer=importer, imported=imported)
    return cycles(graph)


def _is_package(module: str) -> bool:
    return Path(*module.split("."), "__init__.py").is_file()


def main() -> None:
    sys.path.insert(0, str(Path.cwd()))
    graph = grimp.build_graph(*PACKAGES)
    files = Counter(m.split(".")[0] for m in graph.modules)
    print("files:", dict(files), "total", sum(files.values()))
    arrows: Counter[tuple[str, str]] = Counter()
    for importer in graph.modules:
        for imported in graph.find_modules_directly_imported_by(importer):
            a, b = importer.split(".")[0], imported.split(".")[0]
            if a != b:
                arrows[a, b] += 1
    print("import arrows between packages (importer -> imported: module pairs):")
    for (a, b), n in sorted(arrows.items()):
        print(f"  {a} -> {b}: {n}")
    raw = cycles(graph)
    found = package_cycles(graph)
    print(f"cycles: {len(found)} ({len(raw)} counting a package's imports of its own modules)")
    for component in found:
        print("  " + " - ".join(component))
    seam = Path("evaluator/seam")
    if seam.is_dir():
        print("seam interfaces (methods, of them abstract; class attributes):")
        for path in sorted(seam.glob("*.py")):
            for node in ast.parse(path.read_text()).body:
                if isinstance(node, ast.ClassDef) and any(
                    isinstance(b, (ast.Name, ast.Subscript, ast.Attribute)) for b in node.bases
                ):
                    methods = [n for n in node.body if isinstance(n, ast.FunctionDef)]
                    abstract = [
                        m
                        for m in methods
                        if any("abstractmethod" in ast.unparse(d) for d in m.decorator_list)
                    ]
                    attrs = [n for n in node.body if isinstance(n, ast.AnnAssign)]
                    if methods:
                        print(
                            f"  {path.stem}.{node.name}: {len(methods)} methods "
                            f"({len(abstract)} abstract), {len(attrs)} attributes"
                        )


if __name__ == "__main__":
    main()
