"""Several modules of the package as one standalone module: code that must run where envre-hf is not installed.

transformers loads a checkpoint's remote code (``custom_pipelines``) file by file and follows only sibling
imports, so the pipeline's code is ONE module GENERATED from the package's sources: the modules the roots import
relatively, dependencies first, relative imports dropped, package data embedded. ``if TYPE_CHECKING:`` imports
are not followed.
"""

from __future__ import annotations

import ast
import importlib.util
import re
from collections.abc import Iterator
from pathlib import Path

_RESOURCE = re.compile(r'resources\.files\("([\w.]+)"\)\.joinpath\("([^"]+)"\)\.read_text\("utf-8"\)')


class BundleError(RuntimeError):
    """The package's modules cannot be put into one standalone module (an import form the bundler does not know)."""


def _source_path(module: str) -> Path:
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        raise BundleError(f"cannot find module {module}")
    return Path(spec.origin)


def _absolute(module: str, node: ast.ImportFrom) -> str:
    package = module.rpartition(".")[0]
    for _ in range(node.level - 1):
        package = package.rpartition(".")[0]
    return f"{package}.{node.module}" if node.module else package


def _is_type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"


def _runtime_nodes(node: ast.AST) -> Iterator[ast.AST]:
    """``ast.walk`` without the bodies of ``if TYPE_CHECKING:`` (imports for annotations only)."""
    for child in ast.iter_child_nodes(node):
        if _is_type_checking(child):
            yield from (n for block in child.orelse for n in (block, *_runtime_nodes(block)))
            continue
        yield child
        yield from _runtime_nodes(child)


def _dependencies(module: str) -> list[str]:
    tree = ast.parse(_source_path(module).read_text("utf-8"))
    deps = []
    for node in _runtime_nodes(tree):
        if isinstance(node, ast.ImportFrom) and node.level > 0:
            target = _absolute(module, node)
            if any(alias.asname is not None for alias in node.names) or _source_path(target).name == "__init__.py":
                raise BundleError(f"{module}: only 'from .module import name' is bundled, not {ast.unparse(node)!r}")
            deps.append(target)
        elif isinstance(node, ast.Import) and any(a.name.split(".")[0] == "envre_hf" for a in node.names):
            raise BundleError(f"{module}: absolute import of envre_hf is not bundled")
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("envre_hf"):
            raise BundleError(f"{module}: absolute import of envre_hf is not bundled")
    return list(dict.fromkeys(deps))


def bundle_order(roots: tuple[str, ...]) -> list[str]:
    """The roots and every envre-hf module they need, dependencies first."""
    order: list[str] = []
    visiting: set[str] = set()

    def visit(module: str) -> None:
        if module in order:
            return
        if module in visiting:
            raise BundleError(f"import cycle through {module}")
        visiting.add(module)
        for dep in _dependencies(module):
            visit(dep)
        visiting.discard(module)
        order.append(module)

    for root in roots:
        visit(root)
    return order


def _top_level_names(tree: ast.Module) -> set[str]:
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


def _strip(module: str, source: str) -> str:
    """The module's code without its docstring, ``__future__`` import and relative imports."""
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    drop: dict[int, str | None] = {}  # line index -> replacement (None: delete)
    body = tree.body
    if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant):
        for i in range(body[0].lineno - 1, body[0].end_lineno):
            drop[i] = None
    for node in ast.walk(tree):
        relative = isinstance(node, ast.ImportFrom) and node.level > 0
        future = isinstance(node, ast.ImportFrom) and node.module == "__future__"
        if relative or future:
            indent = lines[node.lineno - 1][: node.col_offset]
            for i in range(node.lineno - 1, node.end_lineno):
                drop[i] = None
            if node.col_offset:  # inside a block: keep the block non-empty
                drop[node.lineno - 1] = f"{indent}pass  # bundled: {ast.unparse(node)}\n"
    kept = [drop[i] if i in drop else line for i, line in enumerate(lines) if i not in drop or drop[i] is not None]
    return "".join(kept).strip("\n") + "\n"


def bundle_modules(roots: tuple[str, ...], *, title: str, writer: str, purpose: str, name: str = "<bundle>") -> str:
    """The source of one module holding the envre-hf modules ``roots`` need; its docstring says ``title``, who
    writes it (``writer``) and why (``purpose``)."""
    order = bundle_order(roots)
    sources = {m: _source_path(m).read_text("utf-8") for m in order}
    defined: dict[str, list[str]] = {}
    for module, source in sources.items():
        for top in _top_level_names(ast.parse(source)):
            defined.setdefault(top, []).append(module)
    clashes = {top: mods for top, mods in defined.items() if len(mods) > 1}
    if clashes:  # one namespace: a second definition would silently replace the first
        raise BundleError(f"names defined in several bundled modules: {clashes}")
    data: dict[tuple[str, str], str] = {}

    def embed(match: re.Match) -> str:
        key = (match.group(1), match.group(2))
        spec = importlib.util.find_spec(key[0])
        data[key] = (Path(spec.origin).parent / key[1]).read_text("utf-8")
        return f"_PACKAGE_DATA[{key!r}]"

    parts = []
    for module, source in sources.items():
        body = _RESOURCE.sub(embed, _strip(module, source))
        doc = ast.get_docstring(ast.parse(source)) or ""
        parts.append(f"# {'-' * 70}\n# {module.replace('.', '/')}.py: {doc.splitlines()[0] if doc else ''}\n\n{body}")
    header = (
        f'"""{title} of envre-hf, standalone: GENERATED, do not edit.\n\n'
        f"Written by ``{writer}`` from the modules "
        + ", ".join(f"``{m}``" for m in order)
        + f",\nso that {purpose}.\n"
        '"""\n\nfrom __future__ import annotations\n\n'
        "#: Package data the bundled modules read (``importlib.resources`` in envre-hf).\n"
        f"_PACKAGE_DATA = {data!r}\n\n"
    )
    text = header + "\n\n".join(parts)
    compile(text, name, "exec")
    return text
