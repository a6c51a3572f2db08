"""Mutation testing of the core modules: plant one-line bugs, run the tests that should catch them.

Not part of CI (it runs the targeted tests once per mutant). Each mutant is a one-token or
one-statement change of one line (comparison and arithmetic operators swapped, ``and``/``or``,
``not`` dropped, ``True``/``False`` flipped, an integer constant moved by one, ``break`` and
``continue`` swapped, a simple statement replaced by ``pass``, a ``return`` made to return
``None``), planted in a temporary copy of the repository; mutants that do not compile are
skipped. The targeted tests of the module run first (``-x``: the first failure kills the
mutant); ``--confirm`` re-runs the survivors against the module's wider tests (real data,
builds). A forked child runs each pytest session so the heavy imports (torch, transformers,
datasets) are paid once.

Usage (nice'd, in chunks that each finish within 10 minutes)::

    nice -n 19 python3 benchmarks/mutation.py run --module metric --chunk 1/3 \
        --out benchmarks/results/mutation/metric-1.json
    nice -n 19 python3 benchmarks/mutation.py merge benchmarks/results/mutation/*.json \
        --out benchmarks/results/mutation.json
    nice -n 19 python3 benchmarks/mutation.py bugs --out benchmarks/results/planted_bugs.json
    nice -n 19 python3 benchmarks/mutation.py recheck benchmarks/results/mutation/metric-1.json \
        --out benchmarks/results/mutation/metric-1.json       # its survivors again, after new tests
    python3 benchmarks/mutation.py list --module values      # the mutants, without running anything

The score is killed / (mutants - equivalent); equivalent mutants (no behaviour can tell them
apart) are listed in ``EQUIVALENT`` with the reason, and shown in the output.
"""

from __future__ import annotations

import argparse
import ast
import io
import json
import os
import random
import shutil
import signal
import sys
import tempfile
import time
import tokenize
from dataclasses import asdict, dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("ENVRE_SHARED_DATA", REPO.parent / "shared" / "data"))


@dataclass(frozen=True)
class Target:
    path: str
    tests: tuple[str, ...]  # targeted tests, example tests first (they kill most mutants fastest)
    wider: tuple[str, ...] = ()  # the rest of the suite that exercises the module (for --confirm)
    only: tuple[str, ...] = ()  # restrict to these top-level functions/classes (empty: whole file)


P = "tests/properties/"
_MODEL_TESTS = (
    "test_threshold_decode_and_top_k",
    "test_forward_shapes_loss_and_probabilities",
    "test_prediction_rows_follow_documents_and_carry_doc_ids",
    "test_envre_evaluate_model",
)
TARGETS: dict[str, Target] = {
    "metric": Target(
        "envre_hf/metrics/docre.py",
        ("tests/metrics/test_metric.py", P + "test_prop_metric.py", "tests/metrics/test_metric_fast.py", "tests/metrics/test_metric_reference.py",
         "tests/metrics/test_metric_bulk.py", "tests/metrics/test_metric_cache.py", "tests/metrics/test_metric_fast_text.py"),
        ("tests/analysis/test_analysis.py",),
    ),
    "metric_io": Target(
        "envre_hf/metrics/fast_io.py",
        ("tests/metrics/test_metric_fast.py", "tests/metrics/test_metric_fast_text.py", "tests/metrics/test_metric_cache.py",
         "tests/metrics/test_metric.py"),
        ("tests/cli/test_reliability.py", "tests/cli/test_reliability_campaign.py"),
    ),
    "metric_cache": Target(
        "envre_hf/metrics/cache.py",
        ("tests/metrics/test_metric_cache.py", "tests/metrics/test_metric_fast.py", "tests/metrics/test_metric.py"),
        ("tests/cli/test_reliability.py", "tests/cli/test_reliability_campaign.py"),
    ),
    "pipeline": Target(
        "envre_hf/renaming/pipeline.py",
        ("tests/renaming/test_renaming.py", P + "test_prop_renaming.py", P + "test_prop_values.py"),
        ("tests/renaming/test_renaming_redocred.py", "tests/renaming/test_build.py"),
    ),
    "substitution": Target(
        "envre_hf/renaming/substitution.py",
        ("tests/renaming/test_substitution.py", "tests/renaming/test_renaming.py", P + "test_prop_renaming.py"),
        ("tests/renaming/test_renaming_redocred.py",),
    ),
    "values": Target(
        "envre_hf/renaming/values.py",
        ("tests/renaming/test_values_rules.py", "tests/renaming/test_renaming_values.py", P + "test_prop_values.py"),
        ("tests/renaming/test_renaming_redocred.py",),
    ),
    "leaks": Target(
        "envre_hf/renaming/leaks.py",
        ("tests/renaming/test_renaming.py", P + "test_prop_renaming.py"),
        ("tests/renaming/test_renaming_redocred.py", "tests/renaming/test_build.py"),
    ),
    "decode": Target(
        "envre_hf/models/modeling_docre.py",
        tuple("tests/models/test_models.py::" + t for t in _MODEL_TESTS) + (P + "test_prop_models.py",),
        ("tests/models/test_models.py", "tests/models/test_models_kd_docunet.py"),
        only=("DocREPreTrainedModel.relation_probabilities", "DocREPreTrainedModel.decode", "threshold_decode"),
    ),
    "prediction": Target(
        "envre_hf/models/prediction.py",
        tuple("tests/models/test_models.py::" + t for t in _MODEL_TESTS) + ("tests/features/test_batching.py", P + "test_prop_models.py"),
        ("tests/models/test_models.py", "tests/metrics/test_metric.py"),
        only=("iter_logits", "decode_predictions", "predict"),
    ),
    "losses": Target(
        "envre_hf/training/consistency.py",
        ("tests/training/test_training_losses.py",),
        ("tests/training/test_training_run.py", "tests/training/test_training_models.py"),
    ),
    "pairing": Target(
        "envre_hf/training/pairing.py",
        ("tests/training/test_pairing_units.py", "tests/training/test_training_pairing.py", "tests/training/test_training_losses.py", P + "test_prop_models.py::test_on_the_fly_twins_are_always_aligned"),
        ("tests/training/test_training_run.py", "tests/training/test_training_models.py"),
    ),
    "worklog": Target(
        "envre_hf/renaming/worklog.py",
        ("tests/renaming/test_worklog.py",) + tuple(
            "tests/renaming/test_build.py::" + t
            for t in (
                "test_resume_refuses_a_different_configuration",
                "test_resume_after_injected_crash_equals_uninterrupted_build",
                "test_resume_after_sigkill_equals_uninterrupted_build",
            )
        ),
        ("tests/renaming/test_build.py",),
        only=("WorkLog", "unit_record", "prepare_work_folder"),
    ),
}

#: (module, line number text stripped, mutation) -> why no test can tell the mutant apart.
EQUIVALENT: dict[tuple[str, str, str], str] = {
    ('metric_io', 'if set(map(type, preds)) <= {dict} and all(', "'<=' -> '<'"): (
        'a list of objects then goes through the per-prediction loop, which checks the same and returns the same list'
    ),
    ('metric_io', 'if not ascii_only and not every_string_decoded:', "'and' -> 'or'"): (
        'the UTF-8 of a file whose strings msgspec decodes all is then checked a second time: the same answer, more slowly'
    ),
    ('metric_io', 'if not _plain_text(path, data, every_string_decoded=True):  # _Record, _Mention, _Label refuse unknown fields', "'True' -> 'False'"): (
        'the UTF-8 of a file whose strings msgspec decodes all is then checked a second time: the same answer, more slowly'
    ),
    ('metric_io', 'return False', 'return None'): (
        "_plain_text's answer is read by `if not`: None is as false as False"
    ),
    ('metric_io', 'set(map(type, map(dict.get, preds, repeat(key)))) <= {str, type(None)} for key in ("title", "doc_id")', "'<=' -> '<'"): (
        'the predictions then go through the per-prediction loop, which checks the same and returns the same list'
    ),
    ("metric", "if set(map(type, doc_ids)) == {str} and index.docs.keys() >= set(doc_ids):", "'>=' -> '>'"): (
        "predictions naming every gold document then have their doc_ids resolved one distinct pair at a time: the same keys"
    ),
    ('metric_io', 'return preds', 'return None'): (
        "the loop's return is unreachable: the bulk checks fail only on an item the loop raises for"
    ),
    ('metric_io', 'if not set(map(type, positions)) - {int} and (not positions or 0 <= min(positions) <= max(positions) < len(labels)):', "'<=' -> '<'"): (
        'a stored in-train entry it rejects is computed again and stored: the same labels, a cache miss'
    ),
    ('metric_io', 'if not set(map(type, positions)) - {int} and (not positions or 0 <= min(positions) <= max(positions) < len(labels)):', 'drop not'): (
        'a stored in-train entry it rejects is computed again and stored: the same labels, a cache miss'
    ),
    ("metric_cache", "buffer = bytearray(1 << 18)", "'1' -> '2'"): (
        "the read size only sets how many chunks the file is hashed in: blake2b of the same bytes is the same digest"
    ),
    ("metric_cache", 'with open(path, "rb", buffering=0) as fh:', "'0' -> '1'"): (
        "buffering=1 on a binary file is an ordinary buffered read (Python warns): the same bytes reach the hash"
    ),
    ("metric", "_MAX_JSON_INT = 1 << 63", "'1' -> '2'"): (
        "orjson writes and reads unsigned 64-bit integers: masks below 2**64 round-trip as numbers, larger ones are strings either way"
    ),
    ("metric", "masks if max(masks, default=0) < _MAX_JSON_INT else list(map(str, masks))", "'<' -> '<='"): (
        "a mask of exactly 2**63 fits orjson's unsigned 64-bit integers: written as a number it reads back the same"
    ),
    ("metric", "if hs and (min(hs) < 0 or min(ts) < 0 or max(hs) >= n_ent or max(ts) >= n_ent):", "'0' -> '1'"): (
        "the pre-check only decides whether the per-label loop runs; the loop raises only for a label out of range"
    ),
    ("metric", "if min(chain(doc, hs, ts), default=0) < 0 or any(map(operator.ge, hs, sizes)) or any(map(operator.ge, ts, sizes)):", "'0' -> '1'"): (
        "the default is the minimum of no columns at all: 0 < 0 and 1 < 0 are both false"
    ),
    ("metric", "if set(map(type, sent_ids)) - {int} or min(sent_ids, default=0) < 0:", "'0' -> '1'"): (
        "the default is the minimum of no sentence ids at all: 0 < 0 and 1 < 0 are both false"
    ),
    ("metric", "any_evidence: bool = False", "'False' -> 'True'"): (
        "both _Tally constructors (_tally_loop, _tally_columns) pass any_evidence: the default is never used"
    ),
    ("metric", "predicted_evidence: int = 0", "'0' -> '1'"): (
        "both _Tally constructors (_tally_loop, _tally_columns) pass predicted_evidence: the default is never used"
    ),
    ("metric", "if facts is not None and len(facts) > 0:", "'>' -> '>='"): (
        "with no training facts no gold label is in train: the intersection is empty, 0 either way"
    ),
    ("metric", "correct_evidence: int = 0", "'0' -> '1'"): (
        "both _Tally constructors (_tally_loop, _tally_columns) pass correct_evidence: the default is never used"
    ),
    ("metric", "correct_intra: int = 0", "'0' -> '1'"): (
        "both _Tally constructors (_tally_loop, _tally_columns) pass correct_intra: the default is never used"
    ),
    (
        "prediction",
        'pad = tokenizer.pad_token_id if getattr(tokenizer, "pad_token_id", None) is not None else 0',
        "drop not",
    ): "the pad id only fills positions the attention mask hides: any id gives the same logits",
    ("worklog", "break  # only the last line can lack its newline: cut short by a kill", "'break' -> 'continue'"): (
        "a line without a newline can only be the file's last, so continue ends the loop as break does"
    ),
    (
        "losses",
        "return symmetric_bernoulli_kl(torch.sigmoid(m), torch.sigmoid(m2), eps).sum(dim=-1).mean()",
        "'-' -> '+'",
    ): "the margins are 2-D (pairs x relations): dim=+1 and dim=-1 are the same axis",
    ("worklog", "if self._fh is not None and self._since_sync:", "'and' -> 'or'"): (
        "_since_sync > 0 implies an open file: close() syncs (resetting the count) before it drops the handle"
    ),
    ("pairing", "hts = hts.tolist()", "statement -> pass"): (
        "iterating a 2-D tensor yields its rows, and int() of their 0-d elements equals int() of tolist()'s numbers"
    ),
    ("pairing", "if isinstance(mask, torch.Tensor) and mask.dim() == 2 and mask.shape[1] > 0:", "'0' -> '1'"): (
        "a mask one column wide has nothing to trim: the trimmed length is its width either way"
    ),
    ("pipeline", "self.acronyms += 1", "statement -> pass"): (
        "_may_serve is a prefilter: a candidate with too few acronym names fails _usable_names all the same"
    ),
    ("pipeline", "self.demonyms += 1", "statement -> pass"): (
        "_may_serve is a prefilter: a candidate with too few demonym names fails _usable_names all the same"
    ),
    (
        "pipeline",
        "self.uniform = not self.possessives and all(f == forms[0] for f in forms)",
        "'==' -> '!='",
    ): "the uniform fast path picks what the general path picks (the first unused names of exactly that form)",
    ("pipeline", "break  # 6 is the top score: no later name can beat it", "'break' -> 'continue'"): (
        "a later name needs a score above the best to replace it, and none scores above 6"
    ),
    (
        "pipeline",
        "digest.update(json.dumps([key, value], ensure_ascii=False).encode())",
        "'False' -> 'True'",
    ): "JSON with or without \\u escapes encodes options one-to-one: fingerprints stay stable and distinct",
    ("pipeline", "counts[mention.name] = counts.get(mention.name, 0) + 1", "'1' -> '2'"): (
        "doubling every count keeps the most-frequent-first order of the names"
    ),
    (
        "pipeline",
        "free = rename_values(coarse, names, random.Random(0), None, attempts=1, year_shift=shift, percent=percent)",
        "'0' -> '1'",
    ): "the unvetoed draw only tells no-rule from a collision: a rule gives a value from any seed",
    ("pipeline", "acronyms = sum(1 for _, _, form in out if form.hard == ACRONYM)", "'1' -> '2'"): (
        "_may_serve is a prefilter: a candidate with too few acronym names fails _usable_names all the same"
    ),
    ("pipeline", "demonyms = sum(1 for _, _, form in out if form.hard == DEMONYM)", "'1' -> '2'"): (
        "_may_serve is a prefilter: a candidate with too few demonym names fails _usable_names all the same"
    ),
    ("values", "if 10 <= n % 100 <= 20:", "'10' -> '11'"): (
        "10 ends in 0, which takes 'th' outside the teens as well"
    ),
    ("values", "if 10 <= n % 100 <= 20:", "'<=' -> '<'"): (
        "20 ends in 0, which takes 'th' outside the teens as well"
    ),
    ("values", "new_value = pieces.get(kind, str(value), lambda: str(rng.randint(lo, max(hi, lo + 1))))", "'1' -> '2'"): (
        "hi >= lo + 2 on every branch (century 12..21 or 1..21, day 1..28, ordinal 1..max(9, 2v)), so max() is hi"
    ),
    (
        "values",
        "span = int(end) - int(start[-len(end) :]) if len(end) == 2 else int(end) - int(start)",
        "'==' -> '!='",
    ): "the two spans differ by a multiple of 100 and a two-digit end is printed modulo 100; four-digit ends agree",
    ("values", "if width == 4 and base <= 2010:", "'2010' -> '2011'"): (
        "a decade's base is a multiple of ten: none lies between 2010 and 2011"
    ),
    ("values", "for _ in range(20):", "'20' -> '21'"): (
        "a retry budget: 21 draws differ from 20 only after 20 refused draws, and either way the value is then"
        " kept and refused by the caller, which redraws the entity"
    ),
    (
        "values",
        "step = 10 * round(pieces.year_shift / 10) or (10 if pieces.year_shift > 0 else -10)",
        "'>' -> '>='",
    ): "year_shift is never 0 here: rename_values raises ValueError on a zero shift before any piece is drawn",
}

# --------------------------------------------------------------------------- mutants

_OPS = {
    "<": ("<=",), "<=": ("<",), ">": (">=",), ">=": (">",), "==": ("!=",), "!=": ("==",),
    "+": ("-",), "-": ("+",), "*": ("/",), "/": ("*",), "//": ("*",), "%": ("//",),
    "+=": ("-=",), "-=": ("+=",), "|": ("&",), "&": ("|",),
}  # fmt: skip
_NAMES = {"and": ("or",), "or": ("and",), "True": ("False",), "False": ("True",), "break": ("continue",), "continue": ("break",), "is": ("is not",)}
_SIMPLE = (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr, ast.Raise, ast.Assert, ast.Return, ast.Delete)


@dataclass
class Mutant:
    module: str
    path: str
    line: int
    original: str
    mutated: str
    how: str
    status: str = "pending"  # killed / survived / timeout / equivalent
    killed_by: str | None = None
    seconds: float = 0.0

    def key(self) -> tuple[str, str, str]:
        return (self.module, self.original.strip(), self.how)


def _skipped_lines(tree: ast.Module) -> tuple[set[int], list[tuple[int, int, int, int]]]:
    """Lines never mutated (imports, docstrings, def headers) and annotation spans."""
    lines: set[int] = set()
    spans = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            lines.update(range(node.lineno, node.end_lineno + 1))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Module)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                lines.update(range(body[0].lineno, body[0].end_lineno + 1))
            if not isinstance(node, ast.Module) and body:
                first = min([body[0].lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
                lines.update(range(node.lineno, body[0].lineno))  # the def header with its defaults
                lines.update(range(first, node.lineno))
        for ann in (
            [a.annotation for a in node.args.args + node.args.kwonlyargs if a.annotation]
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            else []
        ) + ([node.annotation] if isinstance(node, ast.AnnAssign) else []) + (
            [node.returns] if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.returns else []
        ):
            spans.append((ann.lineno, ann.col_offset, ann.end_lineno, ann.end_col_offset))
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            lines.update(range(node.lineno, node.end_lineno + 1))
    return lines, spans


def _allowed_lines(tree: ast.Module, only: tuple[str, ...]) -> set[int] | None:
    if not only:
        return None
    out: set[int] = set()
    for node in tree.body:
        names = [node.name] if isinstance(node, (ast.FunctionDef, ast.ClassDef)) else []
        if isinstance(node, ast.ClassDef):
            names += [f"{node.name}.{n.name}" for n in node.body if isinstance(n, ast.FunctionDef)]
            for n in node.body:
                if isinstance(n, ast.FunctionDef) and f"{node.name}.{n.name}" in only:
                    out.update(range(n.lineno, n.end_lineno + 1))
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name in only:
            out.update(range(node.lineno, node.end_lineno + 1))
    return out


def _in_span(spans, line: int, col: int) -> bool:
    return any((l0, c0) <= (line, col) < (l1, c1) for l0, c0, l1, c1 in spans)


def generate(module: str) -> list[Mutant]:
    target = TARGETS[module]
    src = (REPO / target.path).read_text(encoding="utf-8")
    lines = src.splitlines(keepends=True)
    tree = ast.parse(src)
    skipped, spans = _skipped_lines(tree)
    allowed = _allowed_lines(tree, target.only)
    out: list[Mutant] = []
    seen: set[tuple[int, str]] = set()

    def add(line: int, new_line: str, how: str) -> None:
        if (line, new_line) in seen or new_line == lines[line - 1]:
            return
        candidate = "".join(lines[: line - 1] + [new_line] + lines[line:])
        try:
            compile(candidate, target.path, "exec")
        except SyntaxError:
            return
        seen.add((line, new_line))
        out.append(Mutant(module, target.path, line, lines[line - 1].rstrip("\n"), new_line.rstrip("\n"), how))

    def ok(line: int) -> bool:
        return line not in skipped and (allowed is None or line in allowed)

    for tok in tokenize.generate_tokens(io.StringIO(src).readline):
        (l0, c0), (l1, c1) = tok.start, tok.end
        if l0 != l1 or l0 > len(lines) or not ok(l0) or _in_span(spans, l0, c0):
            continue
        text = lines[l0 - 1]
        replacements: tuple[str, ...] = ()
        if tok.type == tokenize.OP and tok.string in _OPS:
            replacements = _OPS[tok.string]
        elif tok.type == tokenize.NAME and tok.string in _NAMES:
            replacements = _NAMES[tok.string]
        elif tok.type == tokenize.NAME and tok.string == "not":
            add(l0, text[:c0] + text[c1:].lstrip(), "drop not")
        elif tok.type == tokenize.NUMBER:
            try:
                value = ast.literal_eval(tok.string)
            except ValueError:
                value = None
            if isinstance(value, int) and not isinstance(value, bool):
                replacements = (str(value + 1),)
            elif isinstance(value, float):
                replacements = ("0.0" if value != 0 else "1.0",)
        for new in replacements:
            add(l0, text[:c0] + new + text[c1:], f"{tok.string!r} -> {new!r}")
    for node in ast.walk(tree):
        if isinstance(node, _SIMPLE) and node.lineno == node.end_lineno and ok(node.lineno):
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
                continue
            if isinstance(node, ast.AnnAssign) and node.value is None:
                continue  # a bare annotation (dataclass field): nothing to delete
            text = lines[node.lineno - 1]
            if text[node.end_col_offset :].strip() not in ("", "\\") and not text[node.end_col_offset :].strip().startswith("#"):
                continue
            indent = text[: node.col_offset]
            if isinstance(node, ast.Return):
                if node.value is not None and not (isinstance(node.value, ast.Constant) and node.value.value is None):
                    add(node.lineno, indent + "return None\n", "return None")
            else:
                add(node.lineno, indent + "pass\n", "statement -> pass")
    out.sort(key=lambda m: (m.line, m.how, m.mutated))
    return out


# --------------------------------------------------------------------------- running


class Sandbox:
    """A temporary copy of the repository in which one file at a time is mutated."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="envre-mutation-"))
        ignore = shutil.ignore_patterns("__pycache__", ".pytest_cache", ".hypothesis", "*.egg-info", "results")
        for name in ("envre_hf", "tests", "spaces", "dataset_scripts", "examples", "benchmarks"):
            if (REPO / name).exists():
                shutil.copytree(REPO / name, self.root / name, ignore=ignore)
        shutil.copy(REPO / "pyproject.toml", self.root / "pyproject.toml")

    def run(
        self,
        tests: list[str],
        path: str,
        source: str | None,
        timeout: float,
        profile: str = "mutation",
        trace: bool = False,
    ) -> tuple[str, str | None, float]:
        """(status, first failing test, seconds) of ``tests`` with ``path`` replaced by ``source``.

        ``trace``: also record which test executes which line of ``path`` (``.mutation-lines``,
        JSON line -> node ids in execution order; ``""`` for lines run at import/collection).
        """
        file = self.root / path
        original = file.read_text(encoding="utf-8")
        if source is not None:
            file.write_text(source, encoding="utf-8")
        report = self.root / ".mutation-report"
        report.unlink(missing_ok=True)
        start = time.monotonic()
        pid = os.fork()
        if pid == 0:  # child: one pytest session against the sandbox
            try:
                os.setpgid(0, 0)
                os.chdir(self.root)
                sys.path.insert(0, str(self.root))
                os.environ["PYTHONPATH"] = str(self.root)
                os.environ["ENVRE_SHARED_DATA"] = str(SHARED_DATA)
                os.environ["ENVRE_HYPOTHESIS_PROFILE"] = profile  # mutation: no shrinking, a failure is enough
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, 1)
                os.dup2(devnull, 2)
                import pytest

                class Recorder:
                    failed: str | None = None

                    def pytest_runtest_logreport(self, report):
                        if report.failed and Recorder.failed is None:
                            Recorder.failed = report.nodeid
                            Path(".mutation-report").write_text(report.nodeid)

                    def pytest_collectreport(self, report):
                        if report.failed and Recorder.failed is None:
                            Recorder.failed = f"collection of {report.nodeid}"
                            Path(".mutation-report").write_text(Recorder.failed)

                plugins: list = [Recorder()]
                if trace:
                    plugins.append(_LineTracer(str(file)))
                rc = pytest.main(
                    [*tests, "-x", "-q", "-p", "no:cacheprovider", "-p", "no:warnings", "--no-header"], plugins=plugins
                )
                if trace:
                    plugins[1].save(Path(".mutation-lines"))
                os._exit(int(rc))
            except BaseException:  # noqa: BLE001
                os._exit(99)
        deadline = start + timeout
        status = None
        while True:
            done, code = os.waitpid(pid, os.WNOHANG)
            if done:
                rc = os.waitstatus_to_exitcode(code)
                status = "survived" if rc == 0 else "killed"
                break
            if time.monotonic() > deadline:
                try:
                    os.killpg(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                os.waitpid(pid, 0)
                status = "timeout"
                break
            time.sleep(0.05)
        seconds = time.monotonic() - start
        file.write_text(original, encoding="utf-8")
        failed = report.read_text() if report.exists() else None
        if status == "killed" and failed is None:
            failed = f"exit status {rc}"
        return status, failed, seconds

    def try_mutant(
        self, tests: list[str], wider: list[str], path: str, source: str, timeout: float
    ) -> tuple[str, str | None, float]:
        """(status, what killed it, seconds) of one mutant: ``tests`` first (none: it survives them, since no
        targeted test executes its line), then ``wider`` when it survived."""
        if tests:
            status, killed_by, seconds = self.run(tests, path, source, timeout)
        else:
            status, killed_by, seconds = "survived", "no targeted test executes this line", 0.0
        if status == "survived" and wider:
            wider_status, failed, secs = self.run(wider, path, source, timeout=600)
            seconds += secs
            if wider_status != "survived":
                status, killed_by = wider_status, f"wider: {failed}"
        return status, killed_by, seconds

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


class _LineTracer:
    """pytest plugin: which test executes which line of one file (``sys.settrace``, that file only)."""

    def __init__(self, filename: str):
        self.filename = filename
        self.current = ""
        self.lines: dict[int, dict[str, None]] = {}
        import threading

        threading.settrace(self._global)
        sys.settrace(self._global)

    def _global(self, frame, event, arg):
        if frame.f_code.co_filename != self.filename:
            return None
        self.lines.setdefault(frame.f_lineno, {})[self.current] = None
        return self._local

    def _local(self, frame, event, arg):
        if event == "line":
            self.lines.setdefault(frame.f_lineno, {})[self.current] = None
        return self._local

    def pytest_runtest_protocol(self, item, nextitem):
        self.current = item.nodeid

    def save(self, path: Path) -> None:
        sys.settrace(None)
        path.write_text(json.dumps({line: list(ids) for line, ids in self.lines.items()}))


def _preimport() -> None:
    """Heavy third-party imports, paid once in the parent (children inherit them on fork)."""
    sys.dont_write_bytecode = True
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")
    import datasets  # noqa: F401
    import hypothesis  # noqa: F401
    import numpy  # noqa: F401
    import pytest  # noqa: F401
    import torch

    torch.set_num_threads(1)
    import transformers  # noqa: F401


def _source_with(m: Mutant, root: Path = REPO) -> str:
    """The source of ``m.path`` under ``root`` with the mutant's line in place (read from the sandbox,
    which holds the snapshot the mutants were generated from, so edits to the repository during a run
    cannot shift lines under it)."""
    lines = (root / m.path).read_text(encoding="utf-8").splitlines(keepends=True)
    lines[m.line - 1] = m.mutated + "\n"
    return "".join(lines)


def cmd_run(args: argparse.Namespace) -> int:
    target = TARGETS[args.module]
    mutants = generate(args.module)
    index, total = (int(x) for x in args.chunk.split("/"))
    chosen = [m for i, m in enumerate(mutants) if i % total == index - 1]
    # a seeded random order: a run cut short by --budget has tested a random sample, not the file's top
    order = list(range(len(chosen)))
    random.Random(0).shuffle(order)
    _preimport()
    box = Sandbox()
    try:
        tests = list(target.tests)
        status, failed, base = box.run(tests, target.path, None, timeout=1800, trace=True)
        if status != "survived":
            print(f"the unmutated tests fail ({failed}); fix them first", file=sys.stderr)
            return 2
        # coverage-guided selection: a mutant runs only the tests that execute its line (in the
        # baseline's order); a line run at import runs them all; a line no test runs survives unrun
        covering = {int(k): v for k, v in json.loads((box.root / ".mutation-lines").read_text()).items()}
        timeout = 3 * base + 60
        print(f"{args.module}: {len(chosen)} of {len(mutants)} mutants (chunk {args.chunk}); tests take {base:.1f} s")
        started = time.monotonic()
        for n, m in enumerate((chosen[i] for i in order), 1):
            if args.budget and time.monotonic() - started > args.budget:
                m.status = "not run"  # out of time: left out of the score, listed in the output
                continue
            if m.key() in EQUIVALENT:
                m.status = "equivalent"
                continue
            ids = covering.get(m.line) or []  # none: only the wider tests (--confirm) can catch it
            selected = tests if "" in ids else ids
            wider = list(target.wider) if args.confirm else []
            m.status, m.killed_by, m.seconds = box.try_mutant(selected, wider, m.path, _source_with(m, box.root), timeout)
            print(f"[{n}/{len(chosen)}] {m.status:9s} {m.path}:{m.line} {m.how}  ({m.seconds:.1f} s)", flush=True)
            _write_run(args, target, base, chosen)  # after every mutant: a killed run keeps what it measured
    finally:
        box.close()
    out = _write_run(args, target, base, chosen)
    _summary([out])
    return 0


def _write_run(args: argparse.Namespace, target: Target, base: float, chosen: list[Mutant]) -> dict:
    """Write the run's output atomically; mutants not tried yet are recorded as ``not run``."""
    mutants = [asdict(m) for m in chosen]
    for m in mutants:
        if m["status"] == "pending":
            m["status"] = "not run"
    out = {
        "command": " ".join(["python3", "benchmarks/mutation.py", *sys.argv[1:]]),
        "module": args.module,
        "chunk": args.chunk,
        "tests": list(target.tests),
        "wider_tests": list(target.wider) if args.confirm else [],
        "baseline_seconds": round(base, 2),
        "mutants": mutants,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(args.out).with_suffix(".tmp")
    tmp.write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, args.out)
    return out


def _summary(parts: list[dict]) -> dict:
    by_module: dict[str, dict[str, int]] = {}
    survivors, equivalent = [], []
    for part in parts:
        for m in part["mutants"]:
            counts = by_module.setdefault(
                m["module"],
                {"mutants": 0, "killed": 0, "survived": 0, "timeout": 0, "equivalent": 0, "removed": 0, "not run": 0},
            )
            counts["mutants"] += 1
            counts[m["status"]] += 1
            if m["status"] == "survived":
                survivors.append(m)
            if m["status"] == "equivalent":
                equivalent.append(m)
    total = {
        k: sum(c[k] for c in by_module.values())
        for k in ("mutants", "killed", "survived", "timeout", "equivalent", "removed", "not run")
    }
    for name, c in [*sorted(by_module.items()), ("ALL", total)]:
        scored = c["mutants"] - c["equivalent"] - c["removed"] - c["not run"]
        c["score"] = round(100.0 * (c["killed"] + c["timeout"]) / scored, 1) if scored else None
        print(
            f"{name:13s} mutants {c['mutants']:4d}  killed {c['killed'] + c['timeout']:4d}  survived {c['survived']:3d}  "
            f"equivalent {c['equivalent']:3d}  removed {c['removed']:3d}  not run {c['not run']:3d}  score {c['score']}%"
        )
    for m in survivors:
        print(f"SURVIVED {m['path']}:{m['line']} {m['how']}\n    - {m['original'].strip()}\n    + {m['mutated'].strip()}")
    for m in equivalent:
        print(f"EQUIVALENT {m['path']}:{m['line']} {m['how']}: {EQUIVALENT.get((m['module'], m['original'].strip(), m['how']))}")
    return {"by_module": by_module, "total": total}


def _read_part(path: str) -> dict:
    """A chunk output of ``run`` (or ``recheck``); ValueError naming the file when it is not one."""
    try:
        part = json.loads(Path(path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}: not JSON ({err})") from None
    if not isinstance(part, dict) or part.get("module") not in TARGETS or not isinstance(part.get("mutants"), list):
        raise ValueError(f"{path}: not an output of mutation.py run (module and mutants expected)")
    return part


def cmd_merge(args: argparse.Namespace) -> int:
    parts = [_read_part(p) for p in args.parts]
    for part in parts:  # equivalence decisions made after the run apply to the merged output
        for m in part["mutants"]:
            if m["status"] == "survived" and (m["module"], m["original"].strip(), m["how"]) in EQUIVALENT:
                m["status"] = "equivalent"
    summary = _summary(parts)
    out = {
        "command": "python3 benchmarks/mutation.py merge " + " ".join(args.parts),
        "chunk_commands": [p["command"] for p in parts],
        "summary": summary,
        "equivalent": [
            {**m, "reason": EQUIVALENT[(m["module"], m["original"].strip(), m["how"])]}
            for p in parts
            for m in p["mutants"]
            if m["status"] == "equivalent"
        ],
        "survivors": [m for p in parts for m in p["mutants"] if m["status"] == "survived"],
        "removed": [m for p in parts for m in p["mutants"] if m["status"] == "removed"],
        "killed": [m for p in parts for m in p["mutants"] if m["status"] in ("killed", "timeout")],
    }
    tmp = Path(args.out).with_suffix(".tmp")
    tmp.write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, args.out)
    return 0


def cmd_recheck(args: argparse.Namespace) -> int:
    """Run a finished chunk's survivors again, against today's tests (and code).

    Tests only grow between a run and its recheck, so a killed mutant stays killed; each survivor's line is
    found again by its exact text (the nearest match to its old line number), and a line that no longer
    exists is reported as ``removed`` (left out of the score and listed).
    """
    part = _read_part(args.part)
    target = TARGETS[part["module"]]
    _preimport()
    box = Sandbox()
    try:
        current = (box.root / target.path).read_text(encoding="utf-8").splitlines(keepends=True)
        tests = list(target.tests)
        todo = [m for m in part["mutants"] if m["status"] == "survived"]
        print(f"{part['module']}: {len(todo)} survivors of {args.part} against the current tests")
        for n, m in enumerate(todo, 1):
            if (m["module"], m["original"].strip(), m["how"]) in EQUIVALENT:
                m["status"] = "equivalent"
                continue
            matches = [i for i, line in enumerate(current) if line.rstrip("\n") == m["original"]]
            if not matches:
                m["status"], m["killed_by"] = "removed", "the line is no longer in the file"
                print(f"[{n}/{len(todo)}] removed   {m['path']}:{m['line']}", flush=True)
                continue
            index = min(matches, key=lambda i: abs(i + 1 - m["line"]))
            lines = list(current)
            lines[index] = m["mutated"] + "\n"
            source = "".join(lines)
            m["path"], m["line"] = target.path, index + 1
            m["status"], m["killed_by"], m["seconds"] = box.try_mutant(tests, list(target.wider), target.path, source, 600)
            print(f"[{n}/{len(todo)}] {m['status']:9s} {target.path}:{m['line']} {m['how']}", flush=True)
    finally:
        box.close()
    part["command"] = part["command"] + " && " + " ".join(["python3", "benchmarks/mutation.py", *sys.argv[1:]])
    part["rechecked"] = True
    tmp = Path(args.out).with_suffix(".tmp")
    tmp.write_text(json.dumps(part, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, args.out)
    _summary([part])
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    for m in generate(args.module):
        print(f"{m.path}:{m.line} {m.how}\n    - {m.original.strip()}\n    + {m.mutated.strip()}")
    print(f"{len(generate(args.module))} mutants", file=sys.stderr)
    return 0


# --------------------------------------------------------------------------- the issue's bugs

#: The bugs of issue 16's "Why" that got through the old suite: (name, file, old text, new text); each
#: is run against the property test file of its module (``BUG_TESTS``).
ISSUE_BUGS = [
    (
        "two different entities can receive the same new name",
        "envre_hf/renaming/pipeline.py",
        "                taken.add(new_name.casefold())\n",
        "                pass\n",
    ),
    (
        "two original names of one entity can receive case variants of one new name",
        "envre_hf/renaming/pipeline.py",
        "            keys.add(key)\n            out.append(joined_name(name))\n",
        "            keys.add(name)\n            out.append(joined_name(name))\n",
    ),
    (
        "the leak check counts original names inside other entities' mentions",
        "envre_hf/renaming/leaks.py",
        "    for entity in doc.entities:\n        for mention in entity.mentions:\n            covered",
        "    for entity in [doc.entities[e] for e in originals]:\n        for mention in entity.mentions:\n            covered",
    ),
    (
        "name isolation misses article variants of excluded names",
        "envre_hf/renaming/pipeline.py",
        "        self._excluded = frozenset(keys) | frozenset(_bare(k) for k in keys)\n",
        "        self._excluded = frozenset(keys)\n",
    ),
    (
        "value rules give numbers a new trailing zero",
        "envre_hf/renaming/values.py",
        'lo = 1 if (i == 0 and digits[0] != "0") or i == free - 1 else 0',
        'lo = 1 if (i == 0 and digits[0] != "0") else 0',
    ),
    (
        "decode/predict ignore config.top_k",
        "envre_hf/models/modeling_docre.py",
        "        top_k = self.config.top_k if top_k is None else top_k\n",
        "        top_k = top_k\n",
    ),
    (
        "on-the-fly twins skip the document alignment check",
        "envre_hf/training/pairing.py",
        "        twin = rename_unit(self.pipeline, doc, self.base_seed + epoch).document  # the one renaming driver\n"
        "        check_document_alignment(doc, twin)\n",
        "        twin = rename_unit(self.pipeline, doc, self.base_seed + epoch).document  # the one renaming driver\n",
    ),
]


BUG_TESTS = {
    "envre_hf/renaming/pipeline.py": P + "test_prop_renaming.py",
    "envre_hf/renaming/leaks.py": P + "test_prop_renaming.py",
    "envre_hf/renaming/values.py": P + "test_prop_values.py",
    "envre_hf/models/modeling_docre.py": P + "test_prop_models.py",
    "envre_hf/training/pairing.py": P + "test_prop_models.py",
}


def cmd_bugs(args: argparse.Namespace) -> int:
    """Plant each bug of the issue once and record which property test fails first (CI profile)."""
    _preimport()
    box = Sandbox()
    previous = json.loads(Path(args.out).read_text(encoding="utf-8"))["bugs"] if args.only and Path(args.out).exists() else []
    results = []
    try:
        for n, (name, path, old, new) in enumerate(ISSUE_BUGS, 1):
            if args.only and n not in args.only:
                results.extend(r for r in previous if r["bug"] == name)
                continue
            source = (REPO / path).read_text(encoding="utf-8")
            if source.count(old) != 1:
                results.append({"bug": name, "file": path, "status": "not planted (the code changed)"})
                print(f"NOT PLANTED {name}", flush=True)
                continue
            tests = BUG_TESTS[path]
            status, failed, secs = box.run([tests], path, source.replace(old, new), timeout=1200, profile="ci")
            results.append(
                {"bug": name, "file": path, "old": old, "new": new, "tests": tests, "status": status, "failed": failed,
                 "seconds": round(secs, 1), "profile": "ci",
                 "command": "python3 benchmarks/mutation.py " + " ".join(sys.argv[1:])}
            )  # fmt: skip
            print(f"{status:9s} {name}: {failed}  ({secs:.1f} s)", flush=True)
    finally:
        box.close()
    commands = list(dict.fromkeys(r.get("command", "") for r in results if r.get("command")))
    out = {"commands": commands, "bugs": results}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return 0 if all(r["status"] == "killed" for r in results) else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    run = sub.add_parser("run", help="run the mutants of one module (or one chunk of them)")
    run.add_argument("--module", required=True, choices=sorted(TARGETS))
    run.add_argument("--chunk", default="1/1", help="i/n: every n-th mutant starting at the i-th")
    run.add_argument("--confirm", action="store_true", help="re-run survivors against the module's wider tests")
    run.add_argument("--out", required=True)
    run.add_argument("--budget", type=float, default=0, help="seconds after which no new mutant is started (0: none)")
    merge = sub.add_parser("merge", help="merge chunk outputs into one report")
    merge.add_argument("parts", nargs="+")
    merge.add_argument("--out", required=True)
    recheck = sub.add_parser("recheck", help="run the survivors of a chunk output again against the current tests")
    recheck.add_argument("part", help="a chunk output of `run`")
    recheck.add_argument("--out", required=True)
    lst = sub.add_parser("list", help="print the mutants of a module")
    lst.add_argument("--module", required=True, choices=sorted(TARGETS))
    bugs = sub.add_parser("bugs", help="plant the bugs of issue 16 one at a time and run the property tests")
    bugs.add_argument("--out", required=True)
    bugs.add_argument("--only", type=int, nargs="*", help="plant only these bugs (1-based); the others are kept from --out")
    args = parser.parse_args(argv)
    commands = {"run": cmd_run, "recheck": cmd_recheck, "merge": cmd_merge, "list": cmd_list, "bugs": cmd_bugs}
    try:
        return commands[args.cmd](args)
    except (OSError, ValueError) as err:  # a missing, unreadable or foreign result file: one line, status 2
        print(f"mutation.py {args.cmd}: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
