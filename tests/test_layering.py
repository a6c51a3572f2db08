"""Imports go down the stages: a stage never imports a later one, subpackages form no cycle, and library
code never imports the ``envre`` command (``envre_hf.cli``).

Every ``import`` statement of the package is read with ``ast``, function-local ones included (they are
edges a reader does not see at the top of a file, but edges all the same). See docs/index.md "Layout".
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGE = "envre_hf"

#: Stage of every subpackage / top-level module of ``envre_hf``, lowest first. A module may import its own
#: stage and lower ones. Shared plumbing sits at the bottom: ``citations`` (BibTeX for the cards), ``version``,
#: ``atomic`` (file writes), ``redaction`` (no credential in a message or a file) and ``replies`` (the one reply cache).
#: The network layer ``net`` (bounds, retries, the one httpx transport, the Hub's client) and ``hub_calls`` (Hub
#: failures as one line, the one confirmed push) come next, below ``documents``, whose reader takes a Hub dataset id as a source. ``metrics`` scores
#: documents and imports nothing else, and the trainer's evaluation and the robustness report score with it, so it
#: sits below ``training``.
STAGES: dict[str, int] = {
    "citations": 0,
    "version": 0,
    "atomic": 0,
    "failures": 0,
    "redaction": 0,
    "replies": 0,
    "net": 1,
    "hub_calls": 1,
    "documents": 2,
    "kb": 3,
    "renaming": 4,
    "features": 5,
    "models": 6,
    "metrics": 7,
    "training": 8,
    "analysis": 9,
    "icl": 10,
    "cli": 11,
}
#: The package root (``envre_hf/__init__.py``) is a facade over the stages: no stage imports it (the version lives
#: in ``envre_hf/version.py``).
#: Library folders outside the package that must not import the command either.
OTHER_LIBRARY_DIRS = ("dataset_scripts", "spaces", "examples")


@dataclass(frozen=True)
class Edge:
    source: str  # subpackage that imports ("<root>" for envre_hf/__init__.py)
    target: str  # subpackage imported ("<root>" for the facade itself)
    where: str  # path:line


def _module_parts(path: Path, root: Path) -> list[str]:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return parts[:-1] if parts[-1] == "__init__" else parts


def _imports(path: Path, root: Path) -> Iterator[tuple[str, list[str], int]]:
    """(absolute module, imported names, line) of every import in ``path``; relative imports resolved."""
    parts = _module_parts(path, root)
    package = parts if path.name == "__init__.py" else parts[:-1]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, [], node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            yield module, [alias.name for alias in node.names], node.lineno


def package_edges(root: Path, package: str = PACKAGE) -> list[Edge]:
    """Every import from one stage of ``package`` (under ``root``) into another."""
    edges = []
    for path in sorted((root / package).rglob("*.py")):
        parts = _module_parts(path, root)
        source = parts[1] if len(parts) > 1 else "<root>"
        for module, names, line in _imports(path, root):
            pieces = module.split(".")
            if pieces[0] != package:
                continue
            if len(pieces) == 1:  # from envre_hf import X: a stage itself, or a name of the facade
                targets = [n if n in STAGES else "<root>" for n in names] or ["<root>"]
            else:
                targets = [pieces[1]]
            where = f"{path.relative_to(root)}:{line}"
            edges.extend(Edge(source, target, where) for target in targets if target != source)
    return edges


def stage_violations(edges: list[Edge]) -> list[str]:
    """Edges into a later stage, into the facade, or from/to a subpackage with no stage."""
    out = []
    for edge in edges:
        if edge.source == "<root>":
            continue  # the facade may re-export any stage
        for name in (edge.source, edge.target):
            if name != "<root>" and name not in STAGES:
                out.append(f"{edge.where}: {PACKAGE}.{name} has no stage: add it to STAGES in tests/test_layering.py")
        if edge.target == "<root>":
            out.append(f"{edge.where}: {edge.source} imports the package facade {PACKAGE}/__init__.py")
        elif edge.source in STAGES and edge.target in STAGES and STAGES[edge.target] > STAGES[edge.source]:
            out.append(f"{edge.where}: {edge.source} (stage {STAGES[edge.source]}) imports the later stage "
                       f"{edge.target} (stage {STAGES[edge.target]})")
    return out


def strongly_connected_groups(graph: dict[str, set[str]]) -> list[list[str]]:
    """Groups of more than one node that reach each other (Tarjan), each sorted, in a deterministic order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def cycles(edges: list[Edge]) -> list[list[str]]:
    """Strongly connected groups of more than one subpackage, the facade left out."""
    graph: dict[str, set[str]] = {}
    for edge in edges:
        if "<root>" not in (edge.source, edge.target):
            graph.setdefault(edge.source, set()).add(edge.target)
            graph.setdefault(edge.target, set())
    return strongly_connected_groups(graph)


def test_every_stage_imports_only_its_own_and_lower_stages():
    edges = package_edges(REPO)
    assert edges, "no import between stages found: the parser reads nothing"
    assert stage_violations(edges) == []


def test_subpackages_form_no_import_cycle():
    assert cycles(package_edges(REPO)) == []


def test_library_code_never_imports_the_command():
    offenders = []
    library = [p for p in (REPO / PACKAGE).rglob("*.py") if "cli" not in p.relative_to(REPO / PACKAGE).parts[:1]]
    for folder in OTHER_LIBRARY_DIRS:
        library += (REPO / folder).rglob("*.py")
    for path in sorted(library):
        for module, names, line in _imports(path, REPO):
            if module.startswith(f"{PACKAGE}.cli") or (module == PACKAGE and "cli" in names):
                offenders.append(f"{path.relative_to(REPO)}:{line}")
    assert offenders == []


@pytest.fixture()
def toy_package(tmp_path: Path) -> Path:
    """A package shaped like envre_hf with one upward import (kb -> renaming), function-local, and a cycle."""
    pkg = tmp_path / PACKAGE
    for sub in ("documents", "kb", "renaming", "analysis", "icl"):
        (pkg / sub).mkdir(parents=True)
        (pkg / sub / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("__version__ = '0'\nfrom .documents import x\n")
    (pkg / "kb" / "corpus.py").write_text(
        "from .. import __version__\nfrom ..documents import x\n\ndef f():\n    from ..renaming.tok import t\n"
    )
    (pkg / "renaming" / "tok.py").write_text("from envre_hf.kb import corpus\n")
    (pkg / "analysis" / "a.py").write_text("from ..icl import y\n")
    (pkg / "icl" / "__init__.py").write_text("from envre_hf.analysis import a\nfrom envre_hf import Document\n")
    return tmp_path


def test_the_checks_find_upward_imports_cycles_and_facade_imports(toy_package):
    edges = package_edges(toy_package)
    problems = stage_violations(edges)
    assert problems == [
        f"{PACKAGE}/analysis/a.py:1: analysis (stage 9) imports the later stage icl (stage 10)",
        f"{PACKAGE}/icl/__init__.py:2: icl imports the package facade {PACKAGE}/__init__.py",
        f"{PACKAGE}/kb/corpus.py:1: kb imports the package facade {PACKAGE}/__init__.py",
        f"{PACKAGE}/kb/corpus.py:5: kb (stage 3) imports the later stage renaming (stage 4)",
    ]
    assert sorted(cycles(edges)) == [["analysis", "icl"], ["kb", "renaming"]]


def module_cycles(root: Path, package: str = "envre_hf") -> list[list[str]]:
    """Groups of modules of ``package`` that import each other, directly or not (function-local imports count)."""
    modules = {".".join(_module_parts(p, root)): p for p in sorted((root / package).rglob("*.py"))}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        deps = set()
        for module, names, _ in _imports(path, root):
            if module.split(".")[0] != package:
                continue
            targets = [f"{module}.{n}" for n in names if f"{module}.{n}" in modules] or [module]
            deps |= {t for t in targets if t in modules and t != name}
        graph[name] = deps
    return strongly_connected_groups(graph)


def test_no_module_imports_itself_through_others():
    """e.g. renaming/build.py <-> renaming/card.py, before the build was split by job."""
    assert module_cycles(REPO) == []


def test_module_cycles_are_found(tmp_path):
    pkg = tmp_path / "envre_hf" / "renaming"
    pkg.mkdir(parents=True)
    (tmp_path / "envre_hf" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "build.py").write_text("from .card import card\nFILE = 'statistics.json'\n")
    (pkg / "card.py").write_text("def card():\n    from .build import FILE\n")
    assert module_cycles(tmp_path) == [["envre_hf.renaming.build", "envre_hf.renaming.card"]]


def uncommented_local_imports(root: Path, package: str = PACKAGE) -> list[str]:
    """Imports of the package's own modules made inside a function without a comment saying why.

    They hide an edge from a reader of the file's top, so each one must say why it cannot be at the top
    (start-up time of the command, an optional heavy dependency, ``import envre_hf`` staying light)."""
    out = []
    for path in sorted((root / package).rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        lines = text.splitlines()
        for node in ast.walk(ast.parse(text)):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for sub in ast.walk(node):
                own = isinstance(sub, ast.ImportFrom) and (sub.level > 0 or (sub.module or "").split(".")[0] == package)
                own = own or isinstance(sub, ast.Import) and any(a.name.split(".")[0] == package for a in sub.names)
                if own and "#" not in lines[sub.lineno - 1]:
                    out.append(f"{path.relative_to(root)}:{sub.lineno}: {lines[sub.lineno - 1].strip()}")
    return sorted(set(out))


def test_function_local_imports_of_the_package_say_why():
    assert uncommented_local_imports(REPO) == []


def test_an_uncommented_local_import_is_reported(tmp_path):
    pkg = tmp_path / "envre_hf" / "training"
    pkg.mkdir(parents=True)
    (pkg / "run.py").write_text(
        "from ..documents import Document\n\n\ndef f():\n"
        "    from ..models import A  # lazy: torch\n    from ..metrics import score\n    import json\n"
    )
    assert uncommented_local_imports(tmp_path) == ["envre_hf/training/run.py:6: from ..metrics import score"]


def test_no_module_name_repeats_across_the_package():
    """One name, one module: ``build.py`` in two folders makes tracebacks and imports ambiguous to a reader."""
    seen: dict[str, list[str]] = {}
    for path in sorted((REPO / PACKAGE).rglob("*.py")):
        if path.name != "__init__.py":
            seen.setdefault(path.name, []).append(str(path.relative_to(REPO)))
    repeated = {name: paths for name, paths in seen.items() if len(paths) > 1}
    assert repeated == {}


def guarded_package_imports(root: Path, folders: tuple[str, ...] = (PACKAGE, "spaces")) -> list[str]:
    """``try: <import of envre_hf> except ImportError`` in ``folders``: a module that is the package's or standalone
    depending on what is installed (two identities)."""
    out = []
    for folder in folders:
        for path in sorted((root / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if not (isinstance(node, ast.Try) and any(
                        "ImportError" in ast.unparse(h.type or ast.Name("BaseException")) for h in node.handlers)):
                    continue
                imports = [n for block in node.body for n in ast.walk(block)
                           if isinstance(n, ast.ImportFrom) and (n.module or "").split(".")[0] == PACKAGE
                           or isinstance(n, ast.Import) and any(a.name.split(".")[0] == PACKAGE for a in n.names)]
                if imports:
                    out.append(f"{path.relative_to(root)}:{node.lineno}")
    return out


def test_no_module_has_two_identities(tmp_path):
    assert guarded_package_imports(REPO) == []
    (tmp_path / "spaces").mkdir()
    (tmp_path / PACKAGE).mkdir()
    (tmp_path / "spaces" / "m.py").write_text("try:\n    from envre_hf.x import y\nexcept ImportError:\n    y = None\n")
    assert guarded_package_imports(tmp_path) == ["spaces/m.py:1"]
