"""The README stays a short front page, what it and docs/ point at exists, and their examples run.

Checked: the README's size, every relative link of README.md and docs/*.md (files and, for markdown targets,
heading anchors), the README's test command against the one CI runs, that every ``from envre_hf... import name``
of a Python example names something that exists, that every ``--option`` an ``envre`` example passes is one
the subcommand accepts, and that every example but the slow ones (NOT_RUN) runs as written and prints its
sample (below).
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import doctest
import importlib
import io
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
import tokenize
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
TESTS = REPO / "tests"
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


def _fenced(path: Path) -> list[tuple[str, str, int]]:
    """(language, text, line) of every fenced block of ``path``."""
    text = path.read_text(encoding="utf-8")
    return [(m.group(1), m.group(2), text.count("\n", 0, m.start()) + 1) for m in _FENCE.finditer(text)]


def _blocks(path: Path, *languages: str) -> list[str]:
    return [text for language, text, _ in _fenced(path) if language in languages]


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
    for example in [e for page in PAGES for e in _examples(page) if e.kind == "shell"]:
        for part in example.text.split("&&"):
            words = shlex.split(part, comments=True) if "envre " in part else []
            if len(words) > 1 and words[0] == "envre":
                out.append((example.page, words))
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


def test_envre_examples_use_no_old_spelling():
    """The documented commands speak the one vocabulary (reliability.md#one-vocabulary): no old spelling, which
    still works for a release but warns (``envre train`` keeps the Trainer's ``--bf16``)."""
    from envre_hf.cli.common import VOCABULARY

    old = {spelling.flag for idea in VOCABULARY.values() for spelling in idea.old}
    assert "--bf16" in old and "--seeds" in old, "the vocabulary lost its old spellings: the check is blind"
    assert [f"{page}: envre {sub} {option}" for page, sub, option in _envre_options()
            if sub != "train" and option in old] == []


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


# --------------------------------------------------------------------------- the examples, run
#
# Every example of README.md and docs/*.md runs here, in order, in a copy of the repository (a temporary folder
# with ../shared/data beside it, as in a checkout), except those NOT_RUN lists with the reason; their options are
# still checked above. Each Python block runs in a fresh interpreter of its own, after the page's Python blocks
# before it (run again there, quietly: what a reader pasting the page has run), so a block needs nothing but what
# the page imports (``import envre_hf`` registers the pipeline's task: nothing else may); ``python -c`` lines run
# in their own process too. A page's shell lines share one set of variables, and every page starts after the
# README's set-up command (SETUP, run once) with the README's trained model (runs/evrt-minilm) stood in for by a
# tiny random one of the same kind (STAND_IN). What an example prints is compared with its sample, with doctest's
# ELLIPSIS and NORMALIZE_WHITESPACE: `...` stands for what varies (timings, long tails), and line breaks are free:
#
# * Python: the comment on the last line of a statement that prints (else the comment lines right below it) is
#   all it prints;
# * shell: the untagged ``` block SAMPLES names for the command is a part of what it prints.

SETUP = ("README.md", "envre build --input ../shared/data/redocred/test_revised.json --kb corpus")
#: The model the README's ``envre train`` writes (over a minute), stood in for by a tiny random ATLOP model and its
#: tokenizer: the examples that only need *a* saved model (the pipeline's) run on it.
STAND_IN = "runs/evrt-minilm"

_SLOW = "over a minute on a 2-core CPU"
_TRAINED = "needs a trained model (runs/evrt-minilm: README's envre train, " + _SLOW + ")"
_HUB = "needs the Hugging Face Hub (no internet in the tests)"
_INSTALL = "installs packages"
_BENCH = "a benchmark script (benchmarks/: run by hand, its output is in benchmarks/results/)"
_SUITE = "runs the test suite"

#: (page, a piece of the command line or Python block naming it uniquely) -> why it is not run.
NOT_RUN: dict[tuple[str, str], str] = {
    ("README.md", "pip install torch==2.13.0 && pip"): _INSTALL + " (its envre build is SETUP, run once)",
    ("README.md", "python3 -m pytest -q tests"): _SUITE,
    ("README.md", "envre train --model_name_or_path $ENCODER"): _SLOW + " (trains)",
    ("README.md", "EVRTTrainer(model=model"): _SLOW + " (trains)",
    ("README.md", "--env env_redocred --max-docs 50"): _TRAINED,
    ("README.md", "--submission runs/submit"): _TRAINED,
    ("README.md", 'AutoModel.from_pretrained("envre/atlop-minilm"'): _HUB,
    ("README.md", "envre predict --model runs/evrt-minilm"): _TRAINED,
    ("README.md", "export OPENAI_API_KEY"): "a placeholder for your key",
    ("README.md", "--backend openai --model gpt-4o-mini"): "needs an OpenAI-compatible endpoint",
    ("README.md", "envre probe --model runs/evrt-minilm"): _TRAINED,
    ("README.md", "envre probe --compare runs/probe_evrt"): _TRAINED,
    ("README.md", "envre attribute --model runs/evrt-minilm"): _TRAINED,
    ("analysis.md", "--copies 1 --output runs/env_redocred_seed0"): "time: one more benchmark build (its options and "
        "the analysis are the README's, which run)",
    ("analysis.md", "--renamed runs/env_redocred_seed0"): "analyses the build above",
    ("analysis.md", "--pred-original runs/icl_orig/predictions.json"): "needs the two envre icl runs (an endpoint)",
    ("attribution.md", "pip install"): _INSTALL,
    ("attribution.md", "envre attribute --model runs/ncrl "): "needs trained NCRL models (benchmarks/replicate.py)",
    ("attribution.md", "envre attribute --model runs/ncrl+evrt"): "needs trained NCRL models",
    ("attribution.md", "--map-curves"): "needs the two envre attribute runs",
    ("attribution.md", "DocumentAttributor(model, tokenizer"): "a fragment: model, tokenizer and doc are yours",
    ("benchmarks.md", "--kb-pool ../shared/data/redocred/dev_revised.json --copies 5 --output env_redocred"):
        "the set-up command again (SETUP; its output is the sample below)",
    ("benchmarks.md", "--kb-pool ../shared/data/redocred/test_revised.json --copies 5"): _SLOW + " on a loaded CPU",
    ("benchmarks.md", "runs/env_redocred_py"): "renames 2,500 documents again, as SETUP (20-30 s)",
    ("benchmarks.md", "check_build_identical.py --rev 486812d --json"): _BENCH,
    ("benchmarks.md", "check_build_identical.py --rev 486812d --docs 500"): _BENCH,
    ("evrt.md", "--evrt_preset redocred-bert"): _HUB + "; trains BERT-base on Re-DocRED train (hours)",
    ("hub.md", 'ds = load_dataset("envre/env_redocred")'): _HUB,
    ("hub.md", "trainer.push_to_hub("): _HUB + " (and a trainer)",
    ("hub.md", "envre push-metric"): _HUB,
    ("hub.md", 'evaluate.load("envre/docre_f1")'): _HUB,
    ("hub.md", "python3 -m venv"): _INSTALL + " (a fresh environment)",
    ("hub.md", "pip install torch==2.13.0 "): _INSTALL,
    ("hub.md", "printf"): _INSTALL,
    ("hub.md", "pip install -r pins.txt"): _INSTALL,
    ("hub.md", "pip install -c pins.txt"): _INSTALL,
    ("hub.md", "pip install --no-deps"): _INSTALL,
    ("hub.md", "python -m pytest -q tests"): _SUITE,
    ("icl.md", "export OPENAI_API_KEY"): "a placeholder for your key",
    ("icl.md", "--output runs/icl_orig"): "needs an OpenAI-compatible endpoint",
    ("icl.md", "--output runs/icl_env"): "needs an OpenAI-compatible endpoint",
    ("icl.md", "results = predict_documents(backend"): "needs an OpenAI-compatible endpoint",
    ("kb.md", "latest-all.json.gz"): "needs a Wikidata dump (100+ GB)",
    ("kb.md", "from envre_hf.kb import WikidataHTTPKB"): "needs the internet (Wikidata)",
    ("kb.md", 'api_url="http://localhost:8181/w/api.php"'): "a local Wikibase (and continues the block above)",
    ("metric.md", "--gold ../shared/data/docred/test.json --submission"): "needs a trained model (runs/atlop-minilm)",
    ("metric.md", "--gold env_docred_test.json"): "needs a trained model and an Env-DocRED test file",
    ("models.md", "model = ATLOPModel.from_encoder_pretrained(encoder)"): _SLOW + " (forward, backward, predict)",
    ("models.md", "--batch-size 8 --save-predictions"): _TRAINED,
    ("models.md", "prepare_upload(model"): "continues the ATLOP example above",
    ("models.md", "kd = KDDocREModel.from_encoder_pretrained"): _SLOW,
    ("predict.md", 'ner="dslim/bert-base-NER")'): _TRAINED + "; " + _HUB,
    ("predict.md", '{"head": {"name": "Marie Curie"'): "a sample of the pipeline's output",
    ("predict.md", "--input ../shared/data/redocred/test_revised.json --output runs/test-preds.jsonl"): _TRAINED,
    ("predict.md", "--input runs/texts.jsonl"): _TRAINED + " (runs/texts.jsonl: the README's)",
    ("predict.md", "--input notes.txt"): _TRAINED + "; notes.txt is yours; " + _HUB,
    ("probe.md", "--copies 5 --output runs/probe_evrt --save-predictions"): _TRAINED,
    ("probe.md", "--output runs/probe_evrt_gold"): _TRAINED,
    ("probe.md", "from envre_hf.analysis.name_reliance import run_probe"): _TRAINED,
    ("probe.md", "--output runs/probe_gpt4o_mini"): "needs an OpenAI-compatible endpoint",
    ("probe.md", "nli_extractor.py"): _HUB + " (an NLI model)",
    ("probe.md", "--compare runs/probe_evrt runs/probe_gpt4o_mini"): "needs the two probes above",
    ("speed.md", 'model.set_attn_implementation("eager")'): "a fragment: model is yours",
    ("speed.md", "--quantize int8"): "a fragment: runs/atlop and dev.json are yours",
    ("speed.md", "--gold dev.json --precision auto"): "a fragment: runs/atlop and dev.json are yours",
    ("speed.md", "bench_models.py --families atlop ncrl"): _BENCH,
    ("speed.md", "bench_roofline.py --json-out"): _BENCH,
    ("speed.md", "bench_evrt.py"): _BENCH,
    ("speed.md", "bench_metric.py"): _BENCH,
    ("speed.md", "gpu_check.sh"): _BENCH + " (a GPU)",
    ("testing.md", "export PYTHONPATH"): _SUITE,
    ("testing.md", "# everything"): _SUITE,
    ("testing.md", "# property tests only"): _SUITE,
    ("testing.md", "# nightly-style run"): _SUITE,
    ("testing.md", "pip install"): _INSTALL,
    ("testing.md", "mutation.py --list"): _BENCH,
    ("testing.md", "mutation.py tokenize"): _BENCH,
    ("training.md", "--output_dir runs/evrt-minilm --report_to none"): _SLOW + " (trains)",
    ("training.md", "--exclude-names-from env_redocred --copies 3"): "renames 1,500 documents (20-30 s): the "
        "twins of the next line; tests/training checks their rates",
    ("training.md", "--output_dir runs/evrt-prebuilt"): _SLOW + " (trains)",
    ("training.md", "accelerate launch"): _SLOW + " (trains in two processes)",
    ("training.md", "EVRTTrainer(model=model"): _SLOW + " (trains)",
    ("training.md", "--output runs/evrt-minilm/robustness.json"): _TRAINED,
}

#: (page, start of an untagged sample block) -> (page, piece of the command whose standard output it is).
SAMPLES: dict[tuple[str, str], tuple[str, str]] = {
    ("benchmarks.md", "Built split 'test' of env_redocred"): SETUP,
    ("coherence.md", "Text coherence: year ranges"): SETUP,
}


@dataclasses.dataclass
class Example:
    page: str
    kind: str  # "python" or "shell"
    text: str  # a Python block, or one shell command line (continuations joined)
    line: int  # where it starts on its page

    def __str__(self) -> str:
        return f"{self.page}:{self.line}: {self.text.splitlines()[0][:90]}"


def _examples(page: Path) -> list[Example]:
    out = []
    for language, text, line in _fenced(page):
        if language == "python":
            out.append(Example(page.name, "python", text, line))
        elif language == "bash":
            for i, command in enumerate(re.sub(r"\\\n\s*", " ", text).splitlines()):
                command = command.strip()
                if command and not command.startswith("#"):
                    out.append(Example(page.name, "shell", command, line + 1 + i))
    return out


def _not_run(example: Example) -> str | None:
    return next((why for (page, piece), why in NOT_RUN.items() if page == example.page and piece in example.text),
                None)


def test_not_run_and_samples_name_real_examples():
    """Each key of NOT_RUN names one example (a command repeated on its page counts once), and each of SAMPLES
    one sample block and one command, so the lists cannot go stale."""
    examples = [e for page in PAGES for e in _examples(page)]
    for page, piece in [*NOT_RUN, SETUP, *SAMPLES.values()]:
        hits = {e.text for e in examples if e.page == page and piece in e.text}
        assert len(hits) == 1, f"{page}: {piece!r} names {len(hits)} examples: {sorted(hits)}"
    for page, start in SAMPLES:
        assert len(_samples(page, start)) == 1, f"{page}: no single sample block starting {start!r}"


def _samples(page: str, start: str) -> list[str]:
    """The untagged blocks of ``page`` that begin with ``start``."""
    path = README if page == README.name else REPO / "docs" / page
    return [text for language, text, _ in _fenced(path) if language == "" and text.startswith(start)]


def _check_samples(command: Example, printed: str) -> int:
    """Compares what ``command`` printed with each sample SAMPLES ties to it; returns how many."""
    checked = 0
    for (page, start), (command_page, piece) in SAMPLES.items():
        if command_page == command.page and piece in command.text:
            sample = _samples(page, start)[0].strip()
            _check_output(f"{page}: the sample starting {start!r} (of {command})", f"...{sample}...", printed)
            checked += 1
    return checked


def _check_output(where: str, want: str, got: str) -> None:
    checker = doctest.OutputChecker()
    flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    assert checker.check_output(want, got, flags), f"{where}: the sample is not what it prints:\n" + \
        checker.output_difference(doctest.Example("", want), got, flags)


def _statements(block: str) -> list[tuple[ast.stmt, str | None]]:
    """Each top-level statement of a Python block with the output its comment shows (None: it shows none)."""
    lines = block.splitlines()
    comments = {tok.start[0]: tok.string for tok in tokenize.generate_tokens(io.StringIO(block).readline)
                if tok.type == tokenize.COMMENT}
    out = []
    for statement in ast.parse(block).body:
        shown = None
        if any(isinstance(n, ast.Call) and getattr(n.func, "id", None) == "print" for n in ast.walk(statement)):
            trailing = statement.end_lineno in comments
            parts = [comments[statement.end_lineno]] if trailing else []
            below = statement.end_lineno
            while not trailing and below < len(lines) and lines[below].lstrip().startswith("#"):
                parts.append(lines[below].strip())
                below += 1
            shown = "".join(part[1:].strip() + "\n" for part in parts) or None
        out.append((statement, shown))
    return out


def _run_python(block: str, namespace: dict, where: str) -> None:
    """Runs a Python block statement by statement in ``namespace``, checking what each prints against its sample
    (and passing it on to standard output)."""
    for statement, shown in _statements(block):
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            exec(compile(ast.Module([statement], []), where, "exec"), namespace)  # noqa: S102 - the docs' own code
        if shown is not None:
            _check_output(f"{where} line {statement.lineno}", shown, printed.getvalue())
        sys.stdout.write(printed.getvalue())


def _run_python_alone(block: str, where: str, before: tuple[str, ...] = ()) -> str:
    """Runs ``block`` (checked by :func:`_run_python`) in a fresh interpreter in the working folder, after the
    blocks ``before`` (run quietly); returns what it printed. Only the page's code is imported there."""
    code = (
        f"import contextlib, io, sys\nsys.path.insert(0, {str(TESTS)!r})\nfrom test_docs import _run_python\n"
        "namespace = {'__name__': '__main__'}\n"
        f"for block in {list(before)!r}:\n"
        "    with contextlib.redirect_stdout(io.StringIO()):\n"
        "        exec(compile(block, 'an example before', 'exec'), namespace)\n"
        f"_run_python({block!r}, namespace, {where!r})\n"
    )
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_CACHE": str(Path.cwd().parent / "datasets-cache")}
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600,
                          stdin=subprocess.DEVNULL)  # a prompt ("run the custom code? [y/N]") fails, never waits
    assert proc.returncode == 0, f"{where}: failed in a fresh interpreter:\n{proc.stderr[-4000:]}"
    return proc.stdout


def _expand(word: str, variables: dict[str, str]) -> str:
    return re.sub(r"\$\{?(\w+)\}?", lambda m: variables.get(m.group(1), os.environ.get(m.group(1), m.group(0))), word)


def _run_shell(command: str, variables: dict[str, str], where: str) -> str:
    """Runs one documented command line (``&&`` chains, ``NAME=value``, ``NAME=$(...)``, ``envre ...``,
    ``python -c ...``) in this process; returns what it printed on standard output."""
    printed = io.StringIO()
    for part in command.split(" && "):
        assignment = re.match(r"^(?:export )?(\w+)=(.*)$", part.strip())
        if assignment:
            name, value = assignment.groups()
            inner = re.fullmatch(r"\$\((.*)\)", value.split(" #")[0].strip())
            variables[name] = _run_shell(inner.group(1), variables, where).strip() if inner else \
                _expand(shlex.split(value, comments=True)[0], variables)
            continue
        words = [_expand(w, variables) for w in shlex.split(part, comments=True)]
        err = io.StringIO()
        with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(err):
            if words[0] == "envre":
                from envre_hf.cli.main import main

                status = main(words[1:])
                assert status == 0, f"{where}: exit status {status}:\n{err.getvalue()[-3000:]}"
            elif words[0] in ("python", "python3") and words[1] == "-c":
                printed.write(_run_python_alone(words[2], where))
            else:
                pytest.fail(f"{where}: no way to run {words[0]!r} here: add it to NOT_RUN with the reason")
    return printed.getvalue()


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory, redocred_test_path):
    """A copy of the repository's files with ``../shared/data`` beside it, after the README's set-up command;
    yields (folder, the set-up example, what it printed)."""
    shared_data = redocred_test_path.parents[1]  # the real data (conftest: ../shared/data or ENVRE_SHARED_DATA)
    root = tmp_path_factory.mktemp("checkout")
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                            capture_output=True, check=False) if shutil.which("git") else None
    if listed is not None and listed.returncode == 0:
        for name in filter(None, listed.stdout.decode().split("\0")):
            if (REPO / name).is_file():
                (root / "repo" / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(REPO / name, root / "repo" / name)
    else:  # not a git checkout: the working folder without what examples and tools leave behind
        shutil.copytree(REPO, root / "repo", ignore=shutil.ignore_patterns(
            ".git", "runs", "env_redocred*", "__pycache__", "*.egg-info", ".pytest_cache", ".hypothesis", "mutants"))
    (root / "shared").mkdir()
    (root / "shared" / "data").symlink_to(shared_data.resolve(), target_is_directory=True)
    from _pipeline_helpers import save_docre_model

    save_docre_model(root / "repo" / STAND_IN)
    with pytest.MonkeyPatch.context() as patch:
        import datasets

        patch.setattr(datasets.config, "HF_DATASETS_CACHE", root / "datasets-cache")
        patch.chdir(root / "repo")
        setup = next(e for e in _examples(README) if SETUP[1] in e.text)
        printed = _run_shell(setup.text[setup.text.index("envre build"):], {}, str(setup))
        yield root / "repo", setup, printed


@pytest.mark.slow
def test_the_set_up_prints_the_documented_statistics(sandbox):
    _, setup, printed = sandbox
    assert _check_samples(setup, printed) > 0, "SAMPLES names no sample of the set-up's output"


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_examples_run_as_written_and_print_their_samples(page, sandbox, monkeypatch):
    folder, _, _ = sandbox
    monkeypatch.chdir(folder)
    python: list[str] = []  # the page's Python blocks run so far
    variables: dict[str, str] = {}
    before = _files(folder)
    ran = 0
    for example in _examples(page):
        if _not_run(example) is not None:
            continue
        started, cpu = time.perf_counter(), time.process_time()
        if example.kind == "python":
            _run_python_alone(example.text, str(example), tuple(python))
            python.append(example.text)
        else:
            _check_samples(example, _run_shell(example.text, variables, str(example)))
        ran += 1
        print(f"\n{time.perf_counter() - started:6.1f} s ({time.process_time() - cpu:5.1f} s CPU)  {example}")
    if not ran:
        pytest.skip(f"{page.name}: no example to run (none, or each in NOT_RUN)")
    _assert_ignored(sorted(_files(folder) - before), page.name)


def _files(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()}


def _assert_ignored(written: list[str], page: str) -> None:
    """What the examples wrote is under a folder ``.gitignore`` lists (runs/, env_redocred/), never beside the
    repository's own files."""
    if not written or shutil.which("git") is None:
        return
    ignored = subprocess.run(["git", "check-ignore", "--no-index", "--stdin"], cwd=REPO, input="\n".join(written),
                             capture_output=True, text=True, check=False).stdout.split()
    assert sorted(set(written) - set(ignored)) == [], f"{page}: examples wrote outside the ignored folders"
