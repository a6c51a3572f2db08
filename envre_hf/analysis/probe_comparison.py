"""Several ``envre probe`` runs side by side (``envre probe --compare DIR ...``): one row per probed system (flip rate,
name reliance, new facts, F1 on the originals and on the copies where the run had gold labels) as markdown and JSON,
one plot, and each system's ``model-index`` entry for a model card (:func:`~envre_hf.models.hub.index_results`, as
the cards of trained models write it)."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import yaml
from huggingface_hub.repocard_data import eval_results_to_model_index

from ..atomic import write_json, write_text
from ..models.configuration_docre import portable_name
from ..models.hub import INDEX_METRICS, index_results
from .name_reliance import PROBE_FILE, WORK_DIR, ProbeError
from .plots import plot_systems
from .report import _pct, _table

COMPARE_JSON = "compare.json"
COMPARE_MD = "compare.md"
COMPARE_PLOT = "compare.png"
MODEL_INDEX = "model-index.yaml"
#: The probe's measures in ``model-index`` (besides the DocRED scores), as percentages of the renamed copies.
PROBE_METRICS = {"flip_rate": "Flip rate", "name_reliance": "Name reliance"}
#: What two runs must share to be compared on equal terms (the same documents, copies and renaming).
_SAME = ("input", "split", "max_docs", "kb", "train", "excluded_names")


@dataclass
class SystemRow:
    """One probe run: the system, what it was probed on, and its measures (fractions; ``None``: not measured)."""

    system: str
    kind: str
    run: str
    documents: int
    copies: int
    facts: int
    flip_rate: float | None
    name_reliance: float | None
    new_facts_per_copy: float
    f1: float | None
    renamed_f1: float | None
    model_index: list[dict[str, Any]]
    inputs: dict[str, Any]


def read_probe(folder: str | os.PathLike) -> dict[str, Any]:
    """A finished probe's ``probe.json``, or :class:`ProbeError` naming the folder and what is wrong."""
    path = Path(folder)
    if not path.is_dir():
        raise ProbeError(f"{path}: not a folder (expected an envre probe output folder)")
    if not (path / PROBE_FILE).is_file():
        unfinished = " (an unfinished probe: rerun it to finish it)" if (path / WORK_DIR).is_dir() else ""
        raise ProbeError(f"{path}: no {PROBE_FILE}, not an envre probe output folder{unfinished}")
    try:
        probe = json.loads((path / PROBE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise ProbeError(f"{path / PROBE_FILE}: unreadable ({type(err).__name__}: {err})") from None
    summary = probe.get("summary") if isinstance(probe, dict) else None
    needed = ("facts", "flip_rate", "name_reliance", "new_facts_per_copy")
    if not isinstance(summary, dict) or any(key not in summary for key in needed):
        raise ProbeError(f"{path / PROBE_FILE}: field 'summary' lacks {', '.join(needed)}: not a probe result")
    if not isinstance(probe.get("documents"), int) or not isinstance(probe.get("copies"), int):
        raise ProbeError(f"{path / PROBE_FILE}: fields 'documents' and 'copies' must be integers")
    if not isinstance(probe.get("gold"), (dict, type(None))) or not isinstance(probe.get("settings", {}), dict):
        raise ProbeError(f"{path / PROBE_FILE}: fields 'gold' and 'settings' must be objects")
    return probe


def system_row(folder: str | os.PathLike, probe: dict[str, Any]) -> SystemRow:
    """The row of one probe run, with its ``model-index`` entry (the system's name made portable: a local path
    becomes its folder name)."""
    settings = probe.get("settings") or {}
    system = settings.get("system") or {}
    name = system.get("name") or settings.get("model") or Path(folder).name
    gold = probe.get("gold") or {}
    original, renamed = gold.get("original") or {}, gold.get("renamed") or {}
    summary = probe["summary"]
    dataset = portable_name(settings["input"]) if settings.get("input") else "documents"
    # two sets, two dataset names (model-index groups results by dataset): the documents and their copies
    copies = {**renamed, **{k: summary[k] for k in PROBE_METRICS}}
    scores = {dataset: original, f"{dataset}, {probe['copies']} renamed copies": copies}
    results = index_results(scores, metrics={**INDEX_METRICS, **PROBE_METRICS})
    return SystemRow(
        system=str(name),
        kind=str(system.get("kind") or "model"),
        run=str(folder),
        documents=probe["documents"],
        copies=probe["copies"],
        facts=summary["facts"],
        flip_rate=summary["flip_rate"],
        name_reliance=summary["name_reliance"],
        new_facts_per_copy=summary["new_facts_per_copy"],
        f1=original.get("f1"),
        renamed_f1=renamed.get("f1"),
        model_index=eval_results_to_model_index(portable_name(str(name)), results),
        inputs={**{key: settings.get(key) for key in _SAME}, "documents": probe["documents"],
                "seeds": probe.get("seeds")},
    )


@dataclass
class ProbeComparison:
    """The rows of :func:`compare_probes` and whether every run probed the same documents and copies."""

    rows: list[SystemRow]
    comparable: bool

    def to_dict(self) -> dict[str, Any]:
        return {"comparable": self.comparable, "systems": [asdict(row) for row in self.rows]}

    def table(self) -> str:
        """One markdown row per system."""
        header = ["system", "kind", "documents x copies", "facts", "flip rate (%)", "name reliance (%)",
                  "new facts per copy", "F1 (%)", "renamed F1 (%)"]  # fmt: skip
        rows = [[row.system, row.kind, f"{row.documents} x {row.copies}", str(row.facts), _pct(row.flip_rate),
                 _pct(row.name_reliance), f"{row.new_facts_per_copy:.2f}", _pct(row.f1), _pct(row.renamed_f1)]
                for row in self.rows]  # fmt: skip
        return "\n".join(_table(header, rows))

    def to_markdown(self, plot_name: str | None = None) -> str:
        """``compare.md``: the table, a warning when the runs probed different things, the plot."""
        out = ["# Name reliance of several systems", "", self.table(), ""]
        if not self.comparable:
            out += ["**The runs probed different documents, copies or renamings: their figures are not comparable "
                    "one to one.**", ""]  # fmt: skip
        out += ["Flip rate: original predictions lost per renamed copy. Name reliance: original predictions kept in "
                "fewer than half the copies. F1 where the run had gold labels (`--gold`)."]  # fmt: skip
        if plot_name:
            out += ["", f"![flip rate, name reliance and F1 per system]({plot_name})"]
        return "\n".join(out) + "\n"


def compare_probes(folders: Sequence[str | os.PathLike], output_dir: str | os.PathLike) -> ProbeComparison:
    """Read every probe folder (all checked before anything is written), then write ``compare.json``, ``compare.md``,
    ``compare.png`` and ``model-index.yaml`` (every system's entry) into ``output_dir``."""
    rows = [system_row(folder, read_probe(folder)) for folder in folders]
    out = Path(output_dir)
    if out.exists() and not out.is_dir():
        raise ProbeError(f"{out}: a file, expected an output folder")
    comparison = ProbeComparison(rows, comparable=len({json.dumps(row.inputs, sort_keys=True) for row in rows}) <= 1)
    names = [row.system for row in rows]
    labels = [row.system if names.count(row.system) == 1 else f"{row.system} [{row.run}]" for row in rows]
    measures = {
        label: {name: value for name, value in (("flip rate", row.flip_rate), ("name reliance", row.name_reliance),
                                                ("F1", row.f1), ("renamed F1", row.renamed_f1)) if value is not None}
        for label, row in zip(labels, rows)
    }  # fmt: skip
    plot_systems(measures, out / COMPARE_PLOT)
    entries = [entry for row in rows for entry in row.model_index]
    write_text(out / MODEL_INDEX, yaml.safe_dump({"model-index": entries}, sort_keys=False, allow_unicode=True))
    write_text(out / COMPARE_MD, comparison.to_markdown(COMPARE_PLOT))
    write_json(out / COMPARE_JSON, comparison.to_dict())
    return comparison
