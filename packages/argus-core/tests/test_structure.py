"""The package's shape: no import cycle, no reaching into another subpackage's private names.

Read from the source with ``ast`` (nothing is imported): every ``import`` / ``from ... import``
statement counts, lazy ones inside functions too, except those under ``if TYPE_CHECKING:`` and
those in a module's ``__getattr__`` (the lazy lookup of a name that moved, kept at its old path).
"""

from __future__ import annotations

import ast
import importlib
import sys
from pathlib import Path

import pytest

from argus_ir._compat import MOVED

SRC = Path(__file__).resolve().parents[1] / "src" / "argus_ir"
MAX_LINES = 500
# modules allowed over MAX_LINES, with the reason written in docs/design.md
LONG_MODULES: dict[str, str] = {}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {_module_name(p): p for p in sorted(SRC.rglob("*.py"))}


def _home(module: str) -> str:
    """The subpackage a module belongs to (``argus_ir.kb.places`` -> ``kb``); a top-level module
    is its own home (``argus_ir.pipeline`` -> ``pipeline``)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _imports(module: str) -> list[tuple[str, list[str], int]]:
    """(imported module, names taken from it, line) for each import of ``module``."""
    path = MODULES[module]
    return _parse_imports(path.read_text(encoding="utf-8"), module, path.name == "__init__.py")


def _parse_imports(source: str, module: str, is_package: bool) -> list[tuple[str, list[str], int]]:
    tree = ast.parse(source)
    type_only: set[int] = set()  # and the lazy lookups of names kept at an old path
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            type_only |= {id(n) for child in node.body for n in ast.walk(child)}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "__getattr__":
            type_only |= {id(n) for n in ast.walk(node)}
    out = []
    for node in ast.walk(tree):
        if id(node) in type_only:
            continue
        if isinstance(node, ast.Import):
            out += [(a.name, [], node.lineno) for a in node.names if a.name.startswith("argus_ir")]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".") if is_package else module.split(".")[:-1]
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            if not base.startswith("argus_ir"):
                continue
            names = [a.name for a in node.names]
            # `from argus_ir.kb import places` imports the submodule argus_ir.kb.places
            subs = [n for n in names if f"{base}.{n}" in MODULES]
            if subs:
                out += [(f"{base}.{n}", [], node.lineno) for n in subs]
            rest = [n for n in names if n not in subs]
            if rest or not subs:
                out.append((base, rest, node.lineno))
    return out


def _graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {m: set() for m in MODULES}
    for module in MODULES:
        for target, _, _ in _imports(module):
            while target not in MODULES and "." in target:
                target = target.rsplit(".", 1)[0]
            if target in MODULES and target != module:
                graph[module].add(target)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _is_package_of(parent: str, module: str) -> bool:
    """A package importing its own submodules (re-exports in ``__init__``) is not a cycle."""
    return module.startswith(parent + ".")


def test_no_import_cycle():
    graph = _graph()
    # a package's __init__ re-exporting its submodules, which import siblings through the
    # package, is the one allowed loop: drop package -> own submodule edges
    for module, targets in graph.items():
        graph[module] = {t for t in targets if not _is_package_of(module, t)}
    assert _cycles(graph) == []


def _private(module: str, target: str, names: list[str]) -> list[str]:
    """The private names ``module`` takes from ``target`` when they are in different homes."""
    home = _home(target)
    if not home or home == _home(module):
        return []
    private = [n for n in names if n.startswith("_") and not n.endswith("__")]  # not __version__
    return private + [p for p in target.split(".")[2:] if p.startswith("_")]


def test_no_module_takes_another_subpackages_private_names():
    offences = [
        f"{MODULES[module].relative_to(SRC)}:{line}: {target} {private}"
        for module in MODULES
        for target, names, line in _imports(module)
        if (private := _private(module, target, names))
    ]
    assert offences == []


@pytest.mark.parametrize("module", sorted(MODULES))
def test_module_size(module):
    lines = MODULES[module].read_text(encoding="utf-8").count("\n")
    assert lines <= MAX_LINES or module in LONG_MODULES, f"{module}: {lines} lines"


def test_the_checks_see_a_cycle_and_a_private_import():
    """The finders themselves, on made-up input, and the live graph is read."""
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []
    source = (
        "from typing import TYPE_CHECKING\n"
        "from argus_ir.sira import _copied_share, Analyzer\n"
        "if TYPE_CHECKING:\n    from argus_ir.eval import _hidden\n"
        "def f():\n    from .stats import _own\n"
    )
    found = _parse_imports(source, "argus_ir.coverage.compute", is_package=False)
    assert found == [
        ("argus_ir.sira", ["_copied_share", "Analyzer"], 2),
        ("argus_ir.coverage.stats", ["_own"], 6),
    ]
    assert _private("argus_ir.coverage.compute", *found[0][:2]) == ["_copied_share"]
    assert _private("argus_ir.coverage.compute", *found[1][:2]) == []  # its own subpackage
    assert "argus_ir.kb.reference" in _graph()["argus_ir.kb.places"]


@pytest.mark.parametrize("old", sorted(MOVED))
def test_a_module_path_of_0_1_imports_the_moved_module_with_a_warning(old, monkeypatch):
    monkeypatch.delitem(sys.modules, old, raising=False)  # import it afresh
    with pytest.warns(DeprecationWarning, match=MOVED[old].replace(".", r"\.")):
        module = importlib.import_module(old)
    assert module is importlib.import_module(MOVED[old])


def test_names_that_left_the_places_module_are_still_found_there():
    from argus_ir.kb import places, shipped

    assert places.DEFAULT_KB == shipped.DEFAULT_KB
    assert places.shipped_kb is shipped.shipped_kb
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        places.nothing_here  # noqa: B018
