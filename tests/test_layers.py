"""The shape of the code: layers, no import circles, no reaching into another module's
private names.

textsieve is layered (``../shared/DESIGN.md``): the data model and options at the bottom;
the format kernels and plumbing; extractors, OCR and web-page reading; the core that
extracts one document; the archive, sources and fetching; the executors; the library API;
enrichment; the service and the reading room; the command on top. A module imports only
from its own layer or those below, and no two modules import each other, directly or round
a longer loop: then each layer can be read, tested and changed knowing only what is below
it, and a new circle or a new arrow up fails here, in the commit that makes it.

Every import counts: at module level, inside a function (a lazy import is still a
dependency) and under ``TYPE_CHECKING`` (a type is a dependency too). A name starting with
``_`` is its module's own business; a module ``_x.py`` is its package's.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = "textsieve"

# Lowest first. A module belongs to the layer of the longest entry it falls under
# ("textsieve.run" covers "textsieve.run.pool"); "textsieve" alone is the package's own
# __init__ (the library API). Every module must fall under one.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("base: data model, options, errors", (
        "textsieve.model", "textsieve.options", "textsieve.errors",
        "textsieve.terminal", "textsieve.filekeys", "textsieve.formats")),
    ("kernels and plumbing", (
        "textsieve.kernels", "textsieve.bytesource", "textsieve.textcodec", "textsieve.render",
        "textsieve.procs", "textsieve.forking", "textsieve.outfiles")),
    ("formats: extractors, OCR, web pages", (
        "textsieve.detection", "textsieve.extractors", "textsieve.ocr", "textsieve.web")),
    ("core: one document", ("textsieve.core",)),
    ("archive, sources, fetching", (
        "textsieve.archive", "textsieve.sources", "textsieve.links",
        "textsieve.fetch", "textsieve.netpolicy", "textsieve.uris")),
    ("executors", ("textsieve.run", "textsieve.events")),
    ("library API", ("textsieve",)),
    ("enrichment", ("textsieve.enrich",)),
    ("service and reading room", ("textsieve.server", "textsieve.ui")),
    ("command", ("textsieve.cli", "textsieve.demo", "textsieve.__main__")),
)

# Imports that break the rules, to be removed (importer, imported): none. An entry here
# must still exist (checked below), so a list of exceptions goes the day its import does
# and cannot hide a new offender.
KNOWN_TO_BE_REMOVED: frozenset[tuple[str, str]] = frozenset()

# Private names imported across modules (importer, module, name): none.
KNOWN_PRIVATE: frozenset[tuple[str, str, str]] = frozenset()


@dataclass(frozen=True)
class Import:
    importer: str
    module: str  # the module imported from (or the module imported)
    name: str | None  # the name taken from it (``from module import name``), if any
    line: int


def modules(src: Path = SRC) -> dict[str, ast.Module]:
    """Every module of the package by dotted name (a package by its own name), parsed."""
    out = {}
    for f in sorted((src / PACKAGE).rglob("*.py")):
        parts = list(f.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = ast.parse(f.read_text(encoding="utf-8"), str(f))
    return out


def _is_package(name: str, trees: dict[str, ast.Module]) -> bool:
    return any(other.startswith(name + ".") for other in trees)


def imports(name: str, tree: ast.Module, trees: dict[str, ast.Module]) -> Iterator[Import]:
    """The package's modules ``name`` imports, wherever the import statement stands, and
    its uses of a private attribute of a module it imported (``mod._x``)."""
    bound: dict[str, str] = {}  # local name -> module it is bound to
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if _is_package(name, trees) else name.split(".")[:-1]
                base = base[:len(base) - node.level + 1]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            if module != PACKAGE and not module.startswith(PACKAGE + "."):
                continue
            for alias in node.names:
                sub = f"{module}.{alias.name}"
                if sub in trees:  # ``from pkg import submodule``
                    bound[alias.asname or alias.name] = sub
                    yield Import(name, sub, None, node.lineno)
                else:
                    yield Import(name, module, alias.name, node.lineno)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == PACKAGE or alias.name.startswith(PACKAGE + "."):
                    bound[alias.asname or alias.name] = alias.name
                    yield Import(name, alias.name, None, node.lineno)
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id in bound and _private(node.attr)):
            yield Import(name, bound[node.value.id], node.attr, node.lineno)


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _owner(module: str, trees: dict[str, ast.Module]) -> str:
    """The module of the package an import names (``textsieve.a.b`` with no ``b.py``:
    ``textsieve.a``)."""
    while module not in trees and "." in module:
        module = module.rsplit(".", 1)[0]
    return module


def graph(trees: dict[str, ast.Module]) -> dict[str, dict[str, int]]:
    """importer -> {imported module: first line}."""
    out: dict[str, dict[str, int]] = {name: {} for name in trees}
    for name, tree in trees.items():
        for imp in imports(name, tree, trees):
            target = _owner(imp.module, trees)
            if target != name and target in trees:
                out[name].setdefault(target, imp.line)
    return out


def private_uses(trees: dict[str, ast.Module]) -> set[tuple[str, str, str]]:
    """(importer, module, name) for each private name of one module another one takes,
    and for each private module (``_x.py``) imported from outside its package."""
    found = set()
    for name, tree in trees.items():
        for imp in imports(name, tree, trees):
            target = _owner(imp.module, trees)
            if target == name:
                continue
            if imp.name is not None and _private(imp.name) and \
                    f"{target}.{imp.name}" not in trees:
                found.add((name, target, imp.name))
            leaf = target.rsplit(".", 1)[-1]
            package = target.rsplit(".", 1)[0]
            if _private(leaf) and not (name == package or name.startswith(package + ".")):
                found.add((name, package, leaf))
    return found


def layer_of(module: str) -> int:
    best, depth = -1, -1
    for i, (_, prefixes) in enumerate(LAYERS):
        for p in prefixes:
            hit = module == p if p == PACKAGE else module == p or module.startswith(p + ".")
            if hit and p.count(".") > depth:
                best, depth = i, p.count(".")
    return best


def circles(edges: dict[str, Iterable[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        while work:
            node, it = work[-1]
            nxt = next(it, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on.add(nxt)
                    work.append((nxt, iter(sorted(edges.get(nxt, ())))))
                elif nxt in on:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    m = stack.pop()
                    on.discard(m)
                    comp.append(m)
                    if m == node:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def violations(trees: dict[str, ast.Module],
               known: frozenset[tuple[str, str]] = frozenset()) -> list[str]:
    """What breaks the layering, the known imports left out: circles, and imports from a
    higher layer."""
    edges = graph(trees)
    kept = {a: {b: line for b, line in bs.items() if (a, b) not in known}
            for a, bs in edges.items()}
    problems = []
    for comp in circles(kept):
        inside = [f"{a} -> {b} (line {kept[a][b]})" for a in comp for b in kept[a]
                  if b in comp]
        problems.append("circle: " + "; ".join(inside))
    for a, bs in sorted(kept.items()):
        for b, line in sorted(bs.items()):
            if layer_of(b) > layer_of(a):
                problems.append(f"arrow up: {a} (line {line}, {LAYERS[layer_of(a)][0]}) "
                                f"imports {b} ({LAYERS[layer_of(b)][0]})")
    return problems


def test_every_module_has_a_layer() -> None:
    trees = modules()
    assert len(trees) > 100
    assert [m for m in trees if layer_of(m) < 0] == []


def test_no_circles_and_no_arrows_up() -> None:
    trees = modules()
    problems = violations(trees, KNOWN_TO_BE_REMOVED)
    assert not problems, "\n".join(problems)
    edges = graph(trees)
    gone = sorted(e for e in KNOWN_TO_BE_REMOVED if e[1] not in edges.get(e[0], {}))
    assert gone == [], "removed: take them off KNOWN_TO_BE_REMOVED"


def test_no_private_names_across_modules() -> None:
    found = private_uses(modules())
    new = sorted(found - KNOWN_PRIVATE)
    assert not new, "\n".join(f"{a} takes {n} from {m}" for a, m, n in new)
    assert sorted(KNOWN_PRIVATE - found) == [], "removed: take them off KNOWN_PRIVATE"


def _fake(files: dict[str, str]) -> dict[str, ast.Module]:
    return {name: ast.parse(code) for name, code in files.items()}


def test_the_checks_see_what_they_are_for() -> None:
    """A circle through a lazy import, an arrow up under TYPE_CHECKING, a private name
    taken with ``from``, as an attribute, and a private module from another package."""
    trees = _fake({
        "textsieve.model": "",
        "textsieve.core": "from .extractors import html\n",
        "textsieve.extractors": "",
        "textsieve.extractors._index": "",
        "textsieve.extractors.html": "def f():\n    from ..web import main\n",
        "textsieve.web": "",
        "textsieve.web.main": "from ..extractors.html import _hidden\n"
                              "from ..extractors import html\nhtml._tag\n",
        "textsieve.kernels": "",
        "textsieve.kernels.xml": "from typing import TYPE_CHECKING\n"
                                 "if TYPE_CHECKING:\n    from ..core import x\n",
        "textsieve.cli": "from .extractors._index import X\nfrom .model import _ok_here\n",
    })
    found = violations(trees)
    assert any(p.startswith("circle: ") and "textsieve.web.main" in p for p in found)
    assert any("arrow up: textsieve.kernels.xml" in p for p in found)
    assert not any("textsieve.cli" in p for p in found)  # the top may import anything
    assert private_uses(trees) == {
        ("textsieve.web.main", "textsieve.extractors.html", "_hidden"),
        ("textsieve.web.main", "textsieve.extractors.html", "_tag"),
        ("textsieve.cli", "textsieve.extractors", "_index"),
        ("textsieve.cli", "textsieve.model", "_ok_here"),
    }
    assert violations(_fake({"textsieve.model": "", "textsieve.core": "from . import model"
                             })) == []
