"""The project's import graph as its source says it: every `import` and `from ... import` of a project module,
at the top of a file or deferred inside a function, read with `ast` (nothing is imported)."""
from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Iterable, List, Set

PACKAGES = ("autopilot", "drivers", "estimation", "hil")


@dataclass(frozen=True)
class Arrow:
    """`source` (a module) imports `target` (a module) at `line` of its file."""

    source: str
    target: str
    line: int

    def __str__(self) -> str:
        return f"{self.source}:{self.line} imports {self.target}"


def modules(root: Path, packages: Iterable[str] = PACKAGES) -> Dict[str, Path]:
    """Dotted module name -> file, for every .py file under the packages at `root`."""
    out = {}
    for pkg in packages:
        for path in sorted((root / pkg).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = path
    return out


def _absolute(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    if node.level == 0:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[:len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def arrows(root: Path, packages: Iterable[str] = PACKAGES) -> List[Arrow]:
    """Every import of one project module by another. `from pkg import name` points at `pkg.name` when that is
    a module, else at `pkg`."""
    mods = modules(root, packages)
    top = set(packages)
    out = []
    for name, path in mods.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _absolute(node, name, path.name == "__init__.py")
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
            else:
                continue
            for t in targets:
                if t.split(".")[0] in top:
                    while t not in mods and "." in t:         # `import a.b.c` of a name inside a module
                        t = t.rsplit(".", 1)[0]
                    if t != name:
                        out.append(Arrow(name, t, node.lineno))
    return out


def cycles(arrows_: Iterable[Arrow]) -> List[List[str]]:
    """The import cycles: each strongly connected set of two or more modules, sorted (Tarjan's algorithm)."""
    graph: Dict[str, Set[str]] = {}
    for a in arrows_:
        graph.setdefault(a.source, set()).add(a.target)
        graph.setdefault(a.target, set())
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on_stack: Set[str] = set()
    found: List[List[str]] = []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)
