"""The README stays a short front page, and what it and docs/ point at exists.

Checked: the README's size, every relative link of README.md and docs/*.md (files and, for markdown targets,
heading anchors), the README's test command against the one CI runs, that every ``from envre_hf... import name``
of a Python example names something that exists, and that every ``--option`` an ``envre`` example passes is one
the subcommand accepts.
"""

from __future__ import annotations

import ast
import importlib
import re
import shlex
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
PAGES = [README, *sorted((REPO / "docs").glob("*.md"))]
#: Pages whose links are checked too (they link into docs/ instead of repeating it).
LINKED_PAGES = [*PAGES, REPO / "dataset_scripts" / "README.md"]
MAX_README_BYTES = 15_000

#: Pages the other parts of the restructuring (issue 13) write; README and docs/index.md link them already.
#: Skipped only while they do not exist, so a broken link to any other file fails.
PENDING_PAGES = {"speed.md", "hub.md", "reliability.md", "coherence.md", "attribution.md", "testing.md", "evrt.md"}

_LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
_FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)


def _prose(text: str) -> str:
    """``text`` without its fenced code blocks (links inside code are not links)."""
    return _FENCE.sub("", text)


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped (``-`` and ``_`` kept), spaces to ``-``."""
    text = re.sub(r"[`*]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    return {_slug(m.group(1)) for m in re.finditer(r"^#{1,6} (.+)$", _prose(path.read_text(encoding="utf-8")), re.M)}


def _blocks(path: Path, *languages: str) -> list[str]:
    return [m.group(2) for m in _FENCE.finditer(path.read_text(encoding="utf-8")) if m.group(1) in languages]


def test_readme_is_a_short_front_page():
    size = len(README.read_bytes())
    assert size < MAX_README_BYTES, f"README.md is {size} bytes: move details into docs/ (limit {MAX_README_BYTES})"


@pytest.mark.parametrize("page", LINKED_PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_relative_links_point_at_existing_files_and_headings(page):
    broken = []
    for target in _LINK.findall(_prose(page.read_text(encoding="utf-8"))):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        file_part, _, anchor = target.partition("#")
        path = (page.parent / file_part).resolve() if file_part else page
        if not path.exists():
            if path.parent == REPO / "docs" and path.name in PENDING_PAGES:
                continue
            broken.append(f"{target}: no file {path}")
        elif anchor and path.suffix == ".md" and anchor not in _anchors(path):
            broken.append(f"{target}: no heading #{anchor} in {path.relative_to(REPO)}")
    assert broken == []


def test_readme_test_command_is_the_one_ci_runs():
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    marker = max(i for i, line in enumerate(ci) if line.startswith("#") and "README's test command" in line)
    ci_command = next(line.strip() for line in ci[marker + 1 :] if line.strip() and not line.startswith("#"))
    text = README.read_text(encoding="utf-8")
    setup = text[text.index("## Set-up") :].split("\n## ", 1)[0]
    commands = [block.strip() for block in _blocks(README, "bash") if block.strip() in setup]
    assert ci_command in commands, f"README's Set-up does not show the CI test command {ci_command!r}"


def _imported_names() -> list[tuple[str, str, str]]:
    out = []
    for page in PAGES:
        for block in _blocks(page, "python"):
            tree = ast.parse(block)  # a syntax error in an example fails here
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in ("envre_hf", "dataset_scripts"):
                    out += [(page.name, node.module, alias.name) for alias in node.names]
    return out


def test_python_examples_import_names_that_exist():
    missing = []
    for page, module, name in _imported_names():
        try:
            imported = importlib.import_module(module)
        except ImportError as err:
            missing.append(f"{page}: {module} ({err})")
            continue
        if not hasattr(imported, name):
            try:
                importlib.import_module(f"{module}.{name}")
            except ImportError:
                missing.append(f"{page}: {module}.{name}")
    assert missing == []


def _envre_commands() -> list[tuple[str, list[str]]]:
    """(page, words) of every ``envre`` command line in a bash block."""
    out = []
    for page in PAGES:
        for block in _blocks(page, "bash"):
            joined = re.sub(r"\\\n\s*", " ", block)
            for line in joined.splitlines():
                if line.lstrip().startswith("#"):
                    continue
                for part in line.split("&&"):
                    words = shlex.split(part.split(" #")[0], posix=True) if "envre " in part else []
                    if len(words) > 1 and words[0] == "envre":
                        out.append((page.name, words))
    return out


def _envre_options() -> list[tuple[str, str, str]]:
    """(page, subcommand, --option) of every ``envre`` command line in a bash block."""
    return [(page, words[1], w.split("=")[0]) for page, words in _envre_commands() for w in words[2:]
            if w.startswith("--")]


def test_envre_examples_use_options_the_command_accepts():
    import argparse

    from envre_hf.cli.main import SUBCOMMANDS

    seen = _envre_options()
    assert any(sub == "build" for _, sub, _ in seen), "no envre example found: the reader is broken"
    unknown = []
    for page, sub, option in seen:
        assert sub in SUBCOMMANDS, f"{page}: envre {sub} is no subcommand"
        if sub == "train":  # HfArgumentParser: checked through its own parser below
            from transformers import HfArgumentParser

            from envre_hf.training.run import DataArguments, EVRTTrainingArguments, ModelArguments

            parser = HfArgumentParser((ModelArguments, DataArguments, EVRTTrainingArguments))
        else:
            parser = argparse.ArgumentParser()
            importlib.import_module(f"envre_hf.cli.{sub}").add_arguments(parser)
        if option not in parser._option_string_actions:
            unknown.append(f"{page}: envre {sub} {option}")
    assert unknown == []


def test_envre_examples_parse_as_written():
    """Every documented command line (but train's, checked above) parses: values, arity, choices, no
    abbreviation. Paths are not looked up (the examples continue one another, so later inputs do not exist yet)."""
    from envre_hf.cli.common import ArgumentParser, UsageError, existing_path
    from envre_hf.cli.main import SUBCOMMANDS

    commands = [(page, words) for page, words in _envre_commands() if words[1] != "train"]
    assert len(commands) > 10, "too few envre examples found: the reader is broken"
    bad = []
    for page, words in commands:
        assert words[1] in SUBCOMMANDS, f"{page}: envre {words[1]} is no subcommand"
        parser = ArgumentParser(prog=f"envre {words[1]}")
        importlib.import_module(f"envre_hf.cli.{words[1].replace('-', '_')}").add_arguments(parser)
        for action in parser._actions:
            if action.type is existing_path:
                action.type = None
        try:
            parser.parse_args(words[2:])
        except UsageError as err:
            bad.append(f"{page}: {' '.join(words)}: {err}")
    assert bad == []
