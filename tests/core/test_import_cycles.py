"""No import cycle among the core's modules (issue 43): every relative import, at the top of a
module or inside a function, is an edge; a package's ``__init__`` re-exporting its own
submodules on demand (``callbacks.__getattr__``) is the package pattern, not a cycle."""

from __future__ import annotations

import ast
from pathlib import Path

AUDIT = Path(__file__).resolve().parents[2] / "audit"


def _name(p: Path) -> str:
    parts = p.relative_to(AUDIT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _edges() -> dict[str, set[str]]:
    mods = {_name(p): p for p in AUDIT.rglob("*.py")}
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for m, p in mods.items():
        package = m if p.name == "__init__.py" else m.rpartition(".")[0]
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom) or node.level == 0:
                continue
            base = [x for x in package.split(".") if x]
            base = base[:len(base) - (node.level - 1)] if node.level > 1 else base
            target = ".".join([*base, *([node.module] if node.module else [])])
            found = {target} if target in graph else {
                ".".join(x for x in (target, a.name) if x) for a in node.names}
            for t in found & graph.keys():
                own_submodule = p.name == "__init__.py" and t.startswith(m + ".")
                if t != m and not own_submodule:
                    graph[m].add(t)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_core_has_no_import_cycle() -> None:
    assert _cycles(_edges()) == []


def test_the_check_finds_a_cycle() -> None:
    """The detector itself: a two-module cycle is found (so an empty answer means something)."""
    assert _cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b"]]
