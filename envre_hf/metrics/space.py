"""The ``docre_f1`` metric as a Hugging Face Space that loads without envre-hf.

``evaluate.load("envre/docre_f1")`` downloads ``docre_f1.py`` and the sibling modules it imports
relatively, nothing else; envre-hf is on no package index. So the Space carries the scorer as one
sibling module, ``docre_f1_scorer.py``, GENERATED here from the package's own modules
(:mod:`envre_hf.metrics.docre` and the document code it needs): never a hand copy.

``python -m envre_hf.metrics.space spaces/docre_f1`` rewrites the sibling module of the Space
folder; ``envre push-metric envre/docre_f1`` regenerates it and uploads the folder as a Space.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import io
import os
import re
import shutil
import sys
import tempfile
import tokenize
from pathlib import Path
from typing import Any
from ..version import __version__

#: Name of the generated sibling module of the Space.
SCORER_MODULE = "docre_f1_scorer"
#: Modules whose names the Space's ``docre_f1.py`` imports; their envre-hf dependencies follow.
ROOTS = (
    "envre_hf.metrics.docre",
    "envre_hf.documents.formats",
    "envre_hf.documents.io",
    "envre_hf.documents.hf",
    "envre_hf.citations",
)
#: Files of a Space folder that are uploaded (besides the generated scorer).
SPACE_FILES = ("README.md", "app.py", "requirements.txt", "docre_f1.py")

_RESOURCE = re.compile(r'resources\.files\("([\w.]+)"\)\.joinpath\("([^"]+)"\)\.read_text\("utf-8"\)')


class BundleError(RuntimeError):
    """The package's modules cannot be put into one standalone module (an import form the bundler does not know)."""


def _source_path(module: str) -> Path:
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        raise BundleError(f"cannot find module {module}")
    return Path(spec.origin)


def _is_package(module: str) -> bool:
    return _source_path(module).name == "__init__.py"


def _absolute(module: str, node: ast.ImportFrom) -> str:
    package = module if _is_package(module) else module.rpartition(".")[0]
    for _ in range(node.level - 1):
        package = package.rpartition(".")[0]
    return f"{package}.{node.module}" if node.module else package


def _defining_module(package: str, name: str) -> str:
    """The submodule of ``package`` that ``package/__init__.py`` imports ``name`` from."""
    tree = ast.parse(_source_path(package).read_text("utf-8"))
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.level == 1 and any(a.name == name for a in node.names):
            return f"{package}.{node.module}"
    raise BundleError(f"{package} does not re-export {name!r} from one of its modules")


def _dependencies(module: str) -> list[str]:
    tree = ast.parse(_source_path(module).read_text("utf-8"))
    deps = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level > 0:
            target = _absolute(module, node)
            for alias in node.names:
                if alias.asname is not None:
                    raise BundleError(f"{module}: 'import ... as' in a relative import is not bundled")
                deps.append(_defining_module(target, alias.name) if _is_package(target) else target)
        elif isinstance(node, ast.Import) and any(a.name.split(".")[0] == "envre_hf" for a in node.names):
            raise BundleError(f"{module}: absolute import of envre_hf is not bundled")
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("envre_hf"):
            raise BundleError(f"{module}: absolute import of envre_hf is not bundled")
    return list(dict.fromkeys(deps))


def bundle_order(roots: tuple[str, ...] = ROOTS) -> list[str]:
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


def _rename(source: str, renames: dict[str, str]) -> str:
    """Rename identifiers (not attributes after a dot) with the tokenizer, keeping the layout."""
    if not renames:
        return source
    lines = source.splitlines(keepends=True)
    edits = []
    previous = None
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.NAME and tok.string in renames and not (previous and previous.string == "."):
            edits.append((tok.start, tok.end, renames[tok.string]))
        if tok.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT):
            previous = tok
    for (row, col), (_, end), new in reversed(edits):
        line = lines[row - 1]
        lines[row - 1] = line[:col] + new + line[end:]
    out = "".join(lines)
    left = {n.id for n in ast.walk(ast.parse(out)) if isinstance(n, ast.Name)} & set(renames)
    if left:
        raise BundleError(f"could not rename {sorted(left)} (used inside an f-string?)")
    return out


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


def bundle_scorer(roots: tuple[str, ...] = ROOTS) -> str:
    """The source of the Space's scorer module: the envre-hf modules ``roots`` need, in one file."""

    order = bundle_order(roots)
    sources = {m: _source_path(m).read_text("utf-8") for m in order}
    defined: dict[str, list[str]] = {}
    for module, source in sources.items():
        for name in _top_level_names(ast.parse(source)):
            defined.setdefault(name, []).append(module)
    clashes = {name: mods for name, mods in defined.items() if len(mods) > 1}
    public = {n: m for n, m in clashes.items() if not n.startswith("_")}
    if public:
        raise BundleError(f"public names defined in several bundled modules: {public}")
    data: dict[tuple[str, str], str] = {}

    def embed(match: re.Match) -> str:
        key = (match.group(1), match.group(2))
        spec = importlib.util.find_spec(key[0])
        data[key] = (Path(spec.origin).parent / key[1]).read_text("utf-8")
        return f"_PACKAGE_DATA[{key!r}]"

    parts = []
    for module, source in sources.items():
        short = module.rsplit(".", 1)[-1]
        renames = {name: f"_{short}{name}" for name, mods in clashes.items() if module in mods}
        body = _RESOURCE.sub(embed, _rename(_strip(module, source), renames))
        doc = ast.get_docstring(ast.parse(source)) or ""
        parts.append(f"# {'-' * 70}\n# {module.replace('.', '/')}.py: {doc.splitlines()[0] if doc else ''}\n\n{body}")
    header = (
        f'"""The DocRED scorer of envre-hf {__version__}, standalone: GENERATED, do not edit.\n\n'
        "Written by ``python -m envre_hf.metrics.space`` from the modules "
        + ", ".join(f"``{m}``" for m in order)
        + ",\nso that the docre_f1 Space loads with only ``evaluate`` installed.\n"
        '"""\n\nfrom __future__ import annotations\n\n'
        "#: Package data the bundled modules read (``importlib.resources`` in envre-hf).\n"
        f"_PACKAGE_DATA = {data!r}\n\n"
    )
    text = header + "\n\n".join(parts)
    compile(text, SCORER_MODULE, "exec")
    return text


def write_scorer(folder: str | os.PathLike) -> Path:
    """(Re)write ``<folder>/docre_f1_scorer.py`` from the installed package, atomically."""
    target = Path(folder) / f"{SCORER_MODULE}.py"
    text = bundle_scorer()
    fd, tmp = tempfile.mkstemp(prefix=f".{SCORER_MODULE}.", suffix=".tmp", dir=str(target.parent))
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


def space_folder(folder: str | os.PathLike, destination: str | os.PathLike) -> Path:
    """Copy the Space's files from ``folder`` into ``destination`` with a freshly generated scorer."""
    folder, destination = Path(folder), Path(destination)
    missing = [name for name in SPACE_FILES if not (folder / name).is_file()]
    if missing:
        raise FileNotFoundError(f"{folder} is not the docre_f1 Space folder: missing {', '.join(missing)}")
    destination.mkdir(parents=True, exist_ok=True)
    for name in SPACE_FILES:
        shutil.copyfile(folder / name, destination / name)
    write_scorer(destination)
    return destination


def push_metric(
    repo_id: str,
    folder: str | os.PathLike = "spaces/docre_f1",
    token: str | None = None,
    private: bool | None = None,
    commit_message: str = "Upload the docre_f1 metric with envre-hf",
    api: Any = None,
) -> Any:
    """Create the Space ``repo_id`` (gradio, as evaluate's metrics) and upload the metric in one commit."""
    from huggingface_hub import HfApi

    api = api if api is not None else HfApi(token=token)
    with tempfile.TemporaryDirectory(prefix="envre-metric-") as tmp:
        staged = space_folder(folder, tmp)
        api.create_repo(repo_id, repo_type="space", space_sdk="gradio", private=private, exist_ok=True)
        return api.upload_folder(repo_id=repo_id, folder_path=str(staged), repo_type="space", commit_message=commit_message)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m envre_hf.metrics.space", description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", nargs="?", default="spaces/docre_f1", help="the Space folder (default spaces/docre_f1)")
    args = parser.parse_args(argv)
    print(write_scorer(args.folder))
    return 0


if __name__ == "__main__":
    sys.exit(main())
