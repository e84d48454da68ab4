"""What ``pip install textsieve`` must bring along, checked against the source itself.

Every third-party module ``src`` imports must come from a distribution pyproject.toml
declares (a core dependency, or an optional extra when the import is guarded by
``try/except ImportError``): relying on a dependency's dependency breaks the day it drops it.
And every distribution one of our dependencies asks for through an *extra* must be declared
directly: pip before 23.3 does not normalise extra names (PEP 685), so justext's
``lxml[html_clean]`` against lxml's ``html-clean`` extra installed nothing, and every web page
failed as ``internal: ImportError`` on a stock Python 3.11.
"""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib.metadata import PackageNotFoundError, packages_distributions, requires
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src" / "textsieve"


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _declared() -> tuple[set[str], set[str]]:
    """(core dependencies, dependencies of the optional extras), normalised names."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    core = {_norm(Requirement(r).name) for r in project["dependencies"]}
    extra = {_norm(Requirement(r).name)
             for reqs in project.get("optional-dependencies", {}).values() for r in reqs}
    return core, extra


# Packages whose every entry point first checks its extra (``enrich.require()``): a lazy
# import inside one of their functions runs only after that check. Anywhere else a lazy
# import of an optional dependency must be guarded like a top-level one.
CHECKED_PACKAGES = ("enrich",)


def _guarded(tree: ast.AST, checked: bool) -> set[int]:
    """Line numbers of imports inside ``try: ... except ImportError``, and, in a package
    that checks its extra up front (``checked``), inside a function body."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if checked and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for inner in node.body:
                lines.update(n.lineno for n in ast.walk(inner) if hasattr(n, "lineno"))
        if isinstance(node, ast.Try) and any(
                isinstance(h.type, ast.Name) and h.type.id in ("ImportError",
                                                               "ModuleNotFoundError")
                for h in node.handlers):
            for inner in node.body:
                lines.update(n.lineno for n in ast.walk(inner) if hasattr(n, "lineno"))
    return lines


def _third_party_imports() -> dict[str, tuple[str, bool]]:
    """Top-level module -> (a file importing it, whether every import of it is guarded)."""
    found: dict[str, tuple[str, bool]] = {}
    for path in sorted(SRC.rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        parts = path.relative_to(SRC).parts
        package = parts[0] if len(parts) > 1 else ""
        guarded = _guarded(tree, package in CHECKED_PACKAGES)
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top in sys.stdlib_module_names or top == "textsieve":
                    continue
                where, all_guarded = found.get(top, (str(path.relative_to(ROOT)), True))
                found[top] = (where, all_guarded and node.lineno in guarded)
    return found


def test_every_imported_module_is_declared() -> None:
    core, extra = _declared()
    dists = packages_distributions()
    imports = _third_party_imports()
    assert {"lxml", "httpx", "pypdfium2"} <= set(imports)  # the walk sees real imports
    missing = []
    for module, (where, guarded) in sorted(imports.items()):
        names = {_norm(d) for d in dists.get(module, [])}
        if not names:
            missing.append(f"{module} (imported in {where}) is not installed")
        elif not names & core and not (guarded and names & extra):
            missing.append(f"{module} (imported in {where}) comes from {sorted(names)}, "
                           "which pyproject.toml does not declare"
                           + ("" if guarded else " as a core dependency"))
    assert not missing, "\n".join(missing)


def _requirements(dist: str) -> list[Requirement]:
    try:
        return [Requirement(r) for r in requires(dist) or []]
    except PackageNotFoundError:
        return []


def test_what_dependencies_want_through_extras_is_declared() -> None:
    core, _ = _declared()
    env = {"python_version": f"{sys.version_info.major}.{sys.version_info.minor}"}
    seen: set[str] = set()
    todo = sorted(core)
    wanted: dict[str, str] = {}  # distribution -> which dependency asks for it by an extra
    while todo:
        dist = todo.pop()
        if dist in seen:
            continue
        seen.add(dist)
        for req in _requirements(dist):
            if req.marker and not req.marker.evaluate({**env, "extra": ""}):
                continue
            todo.append(_norm(req.name))
            for extra in req.extras:  # what the extra pulls in, as new pip resolves it
                for sub in _requirements(req.name):
                    if sub.marker and sub.marker.evaluate({**env, "extra": _norm(extra)}) \
                            and not sub.marker.evaluate({**env, "extra": ""}):
                        wanted[_norm(sub.name)] = f"{dist} -> {req}"
    assert "lxml-html-clean" in wanted  # justext -> lxml[html_clean]: the case in point
    undeclared = {d: why for d, why in wanted.items() if d not in core}
    assert not undeclared, f"declare these directly in pyproject.toml: {undeclared}"
