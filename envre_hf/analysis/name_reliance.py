"""How much does a model lean on names? Its predictions on documents and on renamed copies, matched fact by fact.

Each document is renamed ``copies`` times (seeds ``0 .. copies-1``, as ``envre build --seeds``) by the renaming
pipeline, the model predicts the original and every copy in one batched pass
(:func:`~envre_hf.models.prediction.iter_decoded`), and each fact ``(h, t, r)`` predicted on an original is
looked up in each of its copies. The renaming keeps entity order, so entity ``h`` of a copy *is* entity ``h`` of the
original (its substitution records say which names it got). No gold label is read. Reported:

* **survival**: for each original fact, in how many copies it is predicted again (a histogram over 0..copies);
* **flip rate**: original facts lost per copy, ``1 - kept / (facts x copies)`` (the mean of the per-copy rates);
* **new facts**: facts predicted on a copy but not on its original (per copy, and per original fact);
* **name reliance**: the share of original facts kept in fewer than half the copies;

overall and by relation, entity types (head-tail), intra/inter-sentence and entity count (bins); the flip rate of
(fact, copy) checks by how many of the fact's two entities that copy renamed (a flip with neither renamed is the
context's doing); the most name-dependent facts with their documents and names. With gold labels the robustness
report's P / R / F1 / Ign F1 / Intra / Inter table, scored on the same predictions
(:func:`~envre_hf.analysis.robustness.robustness_report`: the table ``envre evaluate --env`` prints for a build of
the same copies).

The probed system may also be an LLM or any Python extractor (:mod:`envre_hf.analysis.extractors`): anything with
the :class:`ProbedSystem` interface goes through :func:`probe_system`; :func:`run_probe` is a DocRE model's
(:class:`ModelSystem`). It writes ``probe.json``, ``report.md`` and ``flip_rate_by_relation.png`` (and with
``save_predictions`` ``predictions/original.json`` and ``predictions/seed-<s>.json``, the official result format,
copies with their ``doc_id``) into a folder. Each document's predictions are logged as they come
(``.probe/records.jsonl``, :class:`~envre_hf.atomic.RecordLog`), so a killed run rerun with the same
documents, model and settings predicts only what is missing; the log goes once the outputs are written.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ..atomic import RecordLog, refuse_link, write_json, write_text
from ..documents import Document, DocumentError, docred_schema
from ..failures import Remedy
from ..models.prediction import decode_predictions, iter_decoded
from ..renaming import RenamingDriver, is_substituted
from .robustness import RobustnessReport, robustness_report
from .plots import plot_flip_rates
from .report import _pct, _table
from .substitution_table import substitution_table

PROBE_FILE = "probe.json"
REPORT_FILE = "report.md"
PLOT_FILE = "flip_rate_by_relation.png"
PREDICTIONS_DIR = "predictions"
#: Relations in the plot: the ones with the most facts predicted on the originals.
PLOT_RELATIONS = 40
#: The work folder of an unfinished probe: ``manifest.json`` (what is probed) and ``records.jsonl``.
WORK_DIR = ".probe"
WORK_FORMAT = "envre-probe-work/1"
#: Breakdowns of :class:`ProbeResult`, in report order (name -> what the markdown heading says).
BREAKDOWNS = {
    "by_relation": "relation",
    "by_entity_types": "entity types (head-tail)",
    "by_sentence": "intra- / inter-sentence",
    "by_entity_count": "entities in the document",
}
#: (document index, seed); seed ``None`` is the original document.
Unit = tuple[int, int | None]
Fact = tuple[int, int, str]


class ProbeError(ValueError):
    """The output folder holds another probe (or a finished one): one line, exit status 2."""


@dataclass
class Tally:
    """Original facts of one group, how often their copies keep them, and the copies' new facts."""

    facts: int = 0
    #: (fact, copy) pairs whose copy predicts the fact again.
    kept: int = 0
    #: facts kept in fewer than half the copies.
    reliant: int = 0
    #: facts predicted on a copy but not on its original, summed over the copies.
    new: int = 0

    def add(self, kept: int, copies: int) -> None:
        self.facts += 1
        self.kept += kept
        self.reliant += kept < copies / 2

    def to_dict(self, copies: int) -> dict[str, Any]:
        checks = self.facts * copies
        return {
            "facts": self.facts,
            "flip_rate": 1 - self.kept / checks if checks else None,
            "name_reliance": self.reliant / self.facts if self.facts else None,
            "new_facts_per_copy": self.new / copies,
            "new_fact_rate": self.new / checks if checks else None,
        }


@dataclass
class ProbeResult:
    """Everything :func:`compare_copies` measures (``to_dict`` is ``probe.json``); fractions in [0, 1]."""

    documents: int
    seeds: tuple[int, ...]
    summary: dict[str, Any]
    #: :data:`BREAKDOWNS` name -> group -> :meth:`Tally.to_dict`.
    breakdowns: dict[str, dict[str, dict[str, Any]]]
    #: "none" / "one" / "both" entities of the fact renamed in a copy -> checks, lost, flip_rate.
    renamed_arguments: dict[str, dict[str, Any]]
    #: The original facts kept in the fewest copies, with document and names.
    name_dependent: list[dict[str, Any]]
    substitution_rates: dict[str, dict[str, Any]]
    #: The robustness report on the same predictions (only with gold labels).
    gold: RobustnessReport | None = None
    settings: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "documents": self.documents,
            "copies": len(self.seeds),
            "seeds": list(self.seeds),
            "summary": self.summary,
            **self.breakdowns,
            "renamed_arguments": self.renamed_arguments,
            "name_dependent": self.name_dependent,
            "substitution_rates": self.substitution_rates,
            "gold": None if self.gold is None else self.gold.to_dict(),
            "settings": self.settings,
        }

    def to_markdown(self, plot_name: str | None = None) -> str:
        """``report.md``: the summary, the breakdowns, the most name-dependent facts and the gold table."""
        s, k = self.summary, len(self.seeds)
        out = [
            "# Name reliance probe",
            "",
            f"{self.documents} documents, {k} renamed copies each (seeds {', '.join(map(str, self.seeds))}); "
            f"{s['facts']} facts predicted on the originals; "
            f"{_pct(self.substitution_rates.get('ALL', {}).get('rate'))}% of the copies' entities renamed.",
            "",
        ]
        out += _table(
            ["flip rate (%)", "name reliance (%)", "new facts per copy", "new facts per original fact (%)"],
            [[_pct(s["flip_rate"]), _pct(s["name_reliance"]), f"{s['new_facts_per_copy']:.2f}",
              _pct(s["new_fact_rate"])]],  # fmt: skip
        )
        out += [
            "",
            "Flip rate: original predictions lost per copy. Name reliance: original predictions kept in fewer than "
            "half the copies. New facts: predicted on a copy, not on its original.",
            "",
            "## Survival of the original predictions",
            "",
        ]
        counts = [str(s["survival"][str(n)]) for n in range(k + 1)]
        out += _table(["kept in copies", *map(str, range(k + 1))], [["facts", *counts]])
        per_copy = ", ".join(f"seed {seed} {_pct(r)}%" for seed, r in s["per_copy"].items())
        out += ["", f"Flip rate per copy: {per_copy}."]
        if self.gold is not None:
            out += ["", "## Scores against the gold labels", "", self.gold.to_markdown()]
        out += ["", "## Flip rate by entities renamed in the copy", ""]
        out += _table(
            ["entities of the fact renamed", "checks", "lost", "flip rate (%)"],
            [
                [name, str(row["checks"]), str(row["lost"]), _pct(row["flip_rate"])]
                for name, row in self.renamed_arguments.items()
            ],
        )
        for name, title in BREAKDOWNS.items():
            out += ["", f"## By {title}", ""]
            if name == "by_relation" and plot_name:
                out += [f"![Flip rate by relation]({plot_name})", ""]
            out += _table(
                [title, "facts", "flip rate (%)", "name reliance (%)", "new facts per copy"],
                [
                    [
                        _cell(f"{group} {row['relation']}" if "relation" in row else group), str(row["facts"]),
                        _pct(row["flip_rate"]), _pct(row["name_reliance"]), f"{row['new_facts_per_copy']:.2f}",
                    ]
                    for group, row in self.breakdowns[name].items()
                ],
            )  # fmt: skip
        out += ["", f"## The {len(self.name_dependent)} most name-dependent facts", ""]
        out += _table(
            ["document", "head", "relation", "tail", "kept", "renamed to (head / tail, per copy)"],
            [
                [
                    _cell(f["document"]), _cell(f["head"]), _cell(f"{f['r']} {f['relation']}"), _cell(f["tail"]),
                    f"{f['kept']}/{k}",
                    _cell("; ".join(f"{c['head']} / {c['tail']}{'' if c['kept'] else ' (lost)'}" for c in f["copies"])),
                ]
                for f in self.name_dependent
            ],
        )
        return "\n".join(out) + "\n"


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def rename_copies(
    pipeline: Any, docs: Sequence[Document], seeds: Sequence[int], progress: bool = True
) -> list[list[Document]]:
    """``copies[i][c]``: document ``i`` renamed with ``seeds[c]``, through the one renaming driver.

    Facts are matched by entity index, so a renamer that does not keep the entities (count and order) is refused."""
    flat = RenamingDriver(pipeline).rename_documents(docs, seeds, desc="Renaming", progress=progress)
    copies = [[flat[c * len(docs) + i] for c in range(len(seeds))] for i in range(len(docs))]
    for i, (doc, per_doc) in enumerate(zip(docs, copies)):
        for copy in per_doc:
            if copy.num_entities != doc.num_entities:
                raise DocumentError(
                    f"its copy {copy.key!r} has {copy.num_entities} entities instead of {doc.num_entities}: facts cannot "
                    f"be matched across copies", doc_index=i, title=doc.title,
                )  # fmt: skip
    return copies


def with_gold_labels(docs: Sequence[Document], gold: Sequence[Document]) -> list[Document]:
    """``docs`` with the labels of their gold documents (same key, same sentences and entities), for the F1 table."""
    by_key = {g.key: g for g in gold}
    out = []
    for i, doc in enumerate(docs):
        g = by_key.get(doc.key)
        if g is None:
            raise DocumentError(f"no document {doc.key!r} in the gold documents", doc_index=i, title=doc.title)
        if g.sents != doc.sents:
            raise DocumentError("the gold document of this key has other sentences", doc_index=i, title=doc.title, field="sents")
        if [[(m.sent_id, tuple(m.pos)) for m in e.mentions] for e in g.entities] != [
            [(m.sent_id, tuple(m.pos)) for m in e.mentions] for e in doc.entities
        ]:
            raise DocumentError(
                "the gold document of this key has other entities or mentions", doc_index=i, title=doc.title, field="vertexSet"
            )
        if not g.has_labels:
            raise DocumentError("the gold document has no labels", doc_index=i, title=doc.title, field="labels")
        out.append(dataclasses.replace(doc, relations=list(g.relations), has_labels=True))
    return out


def _facts(rows: Sequence[Mapping[str, Any]]) -> set[Fact]:
    return {(int(row["h_idx"]), int(row["t_idx"]), str(row["r"])) for row in rows}


def _renamed_entities(copy: Document) -> set[int]:
    return {sub.entity for sub in copy.substitutions or [] if is_substituted(sub)}


def _name(entity: Any) -> str:
    return entity.names[0] if entity.names else ""


def _entity_bin(n: int, width: int) -> str:
    if width == 1:
        return str(n)
    lo = (n - 1) // width * width + 1
    return f"{lo}-{lo + width - 1}"


def compare_copies(
    docs: Sequence[Document],
    copies: Sequence[Sequence[Document]],
    predictions: Mapping[Unit, Sequence[Mapping[str, Any]]],
    seeds: Sequence[int],
    *,
    top: int = 20,
    entity_bin: int = 5,
) -> ProbeResult:
    """The probe's measures (module doc) from each unit's official-format rows: ``predictions[(i, None)]`` for
    document ``i``, ``predictions[(i, seed)]`` for its copy ``copies[i][c]`` (``seeds[c] == seed``)."""
    if entity_bin < 1:
        raise ValueError(f"entity_bin must be >= 1, got {entity_bin}")
    schema = docred_schema()
    counts = _Comparison(len(seeds), entity_bin)
    for i, doc in enumerate(docs):
        copy_facts = [_facts(predictions[(i, seed)]) for seed in seeds]
        counts.add(i, doc, _facts(predictions[(i, None)]), copy_facts, [_renamed_entities(c) for c in copies[i]])
    return ProbeResult(
        documents=len(docs),
        seeds=tuple(seeds),
        summary=counts.summary(seeds),
        breakdowns=counts.breakdowns(schema),
        renamed_arguments={
            name: {"checks": checks, "lost": lost, "flip_rate": lost / checks if checks else None}
            for name, (checks, lost) in counts.renamed_args.items()
        },
        name_dependent=_name_dependent(counts.facts_kept, docs, copies, top, schema),
        substitution_rates=substitution_table([copy for per_doc in copies for copy in per_doc]),
    )


@dataclass
class _Comparison:
    """What :func:`compare_copies` counts, document by document, over ``copies`` renamed copies each."""

    copies: int
    entity_bin: int
    overall: Tally = field(default_factory=Tally)
    groups: dict[str, dict[str, Tally]] = field(default_factory=lambda: {name: {} for name in BREAKDOWNS})
    #: facts kept in 0, 1, ..., ``copies`` copies.
    survival: list[int] = field(default_factory=list)
    lost_per_copy: list[int] = field(default_factory=list)
    #: "none" / "one" / "both" entities of the fact renamed in a copy -> [checks, lost].
    renamed_args: dict[str, list[int]] = field(default_factory=lambda: {n: [0, 0] for n in ("none", "one", "both")})
    #: (copies keeping it, document index, fact, kept per copy) of every original fact.
    facts_kept: list[tuple[int, int, Fact, list[bool]]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.survival = [0] * (self.copies + 1)
        self.lost_per_copy = [0] * self.copies

    def _keys(self, doc: Document, h: int, t: int, r: str) -> dict[str, str]:
        return {
            "by_relation": r,
            "by_entity_types": f"{doc.entities[h].type}-{doc.entities[t].type}",
            "by_sentence": "intra" if doc.is_intra(h, t) else "inter",
            "by_entity_count": _entity_bin(doc.num_entities, self.entity_bin),
        }

    def add(
        self, i: int, doc: Document, original: set[Fact], copy_facts: list[set[Fact]], renamed: list[set[int]]
    ) -> None:
        """Document ``i``: its facts, each copy's facts and each copy's renamed entities."""
        k = self.copies
        for h, t, r in sorted(original):
            kept = [(h, t, r) in facts for facts in copy_facts]
            n = sum(kept)
            self.survival[n] += 1
            self.overall.add(n, k)
            for name, group in self._keys(doc, h, t, r).items():
                self.groups[name].setdefault(group, Tally()).add(n, k)
            for c, was_kept in enumerate(kept):
                self.lost_per_copy[c] += not was_kept
                row = self.renamed_args[("none", "one", "both")[(h in renamed[c]) + (t in renamed[c])]]
                row[0] += 1
                row[1] += not was_kept
            self.facts_kept.append((n, i, (h, t, r), kept))
        for facts in copy_facts:
            for h, t, r in facts - original:
                self.overall.new += 1
                for name, group in self._keys(doc, h, t, r).items():
                    self.groups[name].setdefault(group, Tally()).new += 1

    def summary(self, seeds: Sequence[int]) -> dict[str, Any]:
        n_facts, k = self.overall.facts, self.copies
        return {
            **self.overall.to_dict(k),
            "survival": {str(n): self.survival[n] for n in range(k + 1)},
            "per_copy": {
                str(seed): (lost / n_facts if n_facts else None) for seed, lost in zip(seeds, self.lost_per_copy)
            },
        }

    def breakdowns(self, schema: Any) -> dict[str, dict[str, dict[str, Any]]]:
        out = {
            name: {
                group: tally.to_dict(self.copies)
                for group, tally in sorted(by_group.items(), key=lambda kv: _group_order(name, kv[0], kv[1]))
            }
            for name, by_group in self.groups.items()
        }
        for rel, row in out["by_relation"].items():
            row["relation"] = schema.id2name.get(rel, rel)
        return out


def _name_dependent(
    facts_kept: list[tuple[int, int, Fact, list[bool]]],
    docs: Sequence[Document],
    copies: Sequence[Sequence[Document]],
    top: int,
    schema: Any,
) -> list[dict[str, Any]]:
    """The ``top`` original facts kept in the fewest copies, with their document and each copy's names."""
    dependent = []
    for n, i, (h, t, r), kept in sorted(facts_kept, key=lambda item: item[0])[:top]:
        doc = docs[i]
        dependent.append(
            {
                "document": doc.key,
                "title": doc.title,
                "h_idx": h,
                "t_idx": t,
                "r": r,
                "relation": schema.id2name.get(r, r),
                "head": _name(doc.entities[h]),
                "tail": _name(doc.entities[t]),
                "kept": n,
                "copies": [
                    {
                        "doc_id": copy.key,
                        "head": _name(copy.entities[h]),
                        "tail": _name(copy.entities[t]),
                        "kept": was_kept,
                    }
                    for copy, was_kept in zip(copies[i], kept)
                ],
            }
        )
    return dependent


def _group_order(name: str, group: str, tally: Tally) -> tuple:
    """Relations and entity types by facts (most first); sentence and entity-count groups in their natural order."""
    if name == "by_entity_count":
        return (int(group.split("-")[0]),)
    if name == "by_sentence":
        return (group != "intra",)
    return (-tally.facts, -tally.new, group)


# --------------------------------------------------------------------------- the run, resumable


def _documents_digest(docs: Sequence[Document]) -> str:
    """What the model reads of the documents: keys, tokens, mentions (labels play no part in a prediction)."""
    digest = hashlib.sha256()
    for doc in docs:
        mentions = [[[m.name, m.sent_id, list(m.pos), m.type] for m in e.mentions] for e in doc.entities]
        digest.update(json.dumps([doc.key, doc.title, doc.sents, mentions], ensure_ascii=False).encode())
    return digest.hexdigest()


def model_digest(model: Any) -> str:
    """A digest of the model's configuration and weights (parameters and buffers, as stored)."""
    import torch  # lazy: the analysis stage imports torch only for a model

    digest = hashlib.sha256(model.config.to_json_string().encode())
    with torch.no_grad():
        for name, tensor in [*model.named_parameters(), *model.named_buffers()]:
            digest.update(name.encode())
            digest.update(str(tensor.dtype).encode())
            digest.update(tensor.detach().contiguous().view(-1).view(torch.uint8).cpu().numpy().tobytes())
    return digest.hexdigest()


def _is_probe_record(record: Any) -> bool:
    return (
        isinstance(record, dict)
        and type(record.get("doc")) is int
        and (record.get("seed") is None or type(record.get("seed")) is int)
        and isinstance(record.get("predictions"), list)
        and all(isinstance(row, dict) for row in record["predictions"])
    )


def claim_output(output: Path, overwrite: bool) -> None:
    """Refuse a file, a link where the probe's own folders go, or a finished probe unless ``overwrite`` (which also
    drops an unfinished one)."""
    if output.exists() and not output.is_dir():
        raise ProbeError(f"{output}: a file, expected an output folder")
    for own in (WORK_DIR, PREDICTIONS_DIR):
        refuse_link(output / own)  # its records would be appended, its files written, in the folder it points to
    if overwrite:
        shutil.rmtree(output / WORK_DIR, ignore_errors=True)
        shutil.rmtree(output / PREDICTIONS_DIR, ignore_errors=True)
    elif not (output / WORK_DIR).is_dir() and (output / PROBE_FILE).exists():
        raise ProbeError(Remedy(f"{output}: holds a finished probe ({PROBE_FILE}); pass ", "overwrite",
                                after=" to run it again or use another folder"))


def _open_work(output: Path, manifest: dict[str, Any]) -> RecordLog:
    """The work log of this probe: continued when the folder holds an unfinished probe of the same units."""
    work = output / WORK_DIR
    if work.is_dir():
        try:
            previous = json.loads((work / "manifest.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):  # missing or damaged: it ties its records to nothing
            previous = {}
        if not isinstance(previous, dict) or previous.get("fingerprint") != manifest["fingerprint"]:
            raise ProbeError(Remedy(
                f"{work}: holds an unfinished probe of other documents, model, knowledge base or settings; rerun with "
                "the options it was started with to continue it, or pass ", "overwrite", after=" to start again",
            ))
    else:
        work.mkdir(parents=True)
        write_json(work / "manifest.json", manifest)
    log = RecordLog(work / "records.jsonl", key=lambda r: (r["doc"], r["seed"]), is_record=_is_probe_record)
    log.read()
    return log


class ProbedSystem(Protocol):
    """What the probe needs of the system it probes: a DocRE model (:class:`ModelSystem`), a Python extractor or an
    LLM (:class:`~envre_hf.analysis.extractors.ExtractorSystem`)."""

    #: ``"model"``, ``"extractor"`` or ``"llm"``, and a name for reports (``probe.json`` settings, ``--compare``).
    kind: str
    name: str

    @property
    def identity(self) -> Mapping[str, Any]:
        """What its predictions depend on besides the documents (part of the work folder's fingerprint)."""
        ...

    def predict(
        self, units: Sequence[tuple[Document, Document]], progress: bool = True
    ) -> Iterator[tuple[int, list[dict[str, Any]]]]:
        """(position in ``units``, official-format rows) of each (document, its original), in any order."""
        ...


@dataclass
class ModelSystem:
    """A DocRE model of the library, predicting the documents in batches (:func:`iter_decoded`)."""

    model: Any
    tokenizer: Any
    batch_size: int = 4
    top_k: int | None = None
    autocast: str | None = None
    kind: str = "model"

    @property
    def name(self) -> str:
        return getattr(self.model.config, "_name_or_path", "") or type(self.model).__name__

    @property
    def identity(self) -> dict[str, Any]:
        return {"model": model_digest(self.model), "top_k": self.top_k, "autocast": self.autocast}

    def predict(
        self, units: Sequence[tuple[Document, Document]], progress: bool = True
    ) -> Iterator[tuple[int, list[dict[str, Any]]]]:
        decoded = iter_decoded(
            self.model, [doc for doc, _ in units], self.tokenizer, batch_size=self.batch_size, top_k=self.top_k,
            progress=progress, autocast=self.autocast, buffer=8 * self.batch_size,  # records land chunk by chunk
        )  # fmt: skip
        for n, d in enumerate(decoded):
            yield n, decode_predictions(d.document, d.hts, d.multi_hot)


def run_probe(
    model: Any,
    tokenizer: Any,
    docs: Sequence[Document],
    pipeline: Any,
    output_dir: str | os.PathLike,
    *,
    batch_size: int = 4,
    top_k: int | None = None,
    autocast: str | None = None,
    **options: Any,
) -> ProbeResult:
    """:func:`probe_system` of a DocRE model (``batch_size``, ``top_k``, ``autocast`` as
    :func:`~envre_hf.models.prediction.predict` takes them); ``options``: those of :func:`probe_system`."""
    system = ModelSystem(model, tokenizer, batch_size=batch_size, top_k=top_k, autocast=autocast)
    return probe_system(system, docs, pipeline, output_dir, **options)


def probe_system(
    system: ProbedSystem,
    docs: Sequence[Document],
    pipeline: Any,
    output_dir: str | os.PathLike,
    *,
    copies: int = 5,
    gold: Sequence[Document] | None = None,
    train: Sequence[Document] | None = None,
    top: int = 20,
    entity_bin: int = 5,
    save_predictions: bool = False,
    overwrite: bool = False,
    progress: bool = True,
    settings: Mapping[str, Any] | None = None,
) -> ProbeResult:
    """Rename, predict (resumable), compare and write the outputs into ``output_dir`` (module doc).

    ``gold``: labelled versions of ``docs`` (:func:`with_gold_labels`), for the gold table (``train``: its Ign
    F1); the labels of ``docs`` themselves are never read. ``pipeline`` is a
    :class:`~envre_hf.renaming.RenamingPipeline` (its KB and name exclusions); ``settings`` are recorded in
    ``probe.json`` as given.
    """
    if copies < 1:
        raise ValueError(f"copies must be >= 1, got {copies}")
    if gold is not None:
        docs = with_gold_labels(docs, gold)  # before the work starts: a mismatch is found at once
    output = Path(output_dir)
    claim_output(output, overwrite)
    seeds = tuple(range(copies))
    renamed = rename_copies(pipeline, docs, seeds, progress)
    units: list[tuple[Unit, Document]] = [((i, None), doc) for i, doc in enumerate(docs)]
    units += [((i, seed), renamed[i][c]) for i in range(len(docs)) for c, seed in enumerate(seeds)]
    # What the predictions depend on: the texts read (the copies, whatever the KB made of the labels) and the system.
    fingerprint_of = {
        "documents": _documents_digest([doc for _, doc in units]),
        **system.identity,
        "seeds": list(seeds),
        "kb": pipeline.kb.snapshot_id(),
        "renaming_config": pipeline.config.fingerprint(),
    }
    fingerprint = hashlib.sha256(json.dumps(fingerprint_of, sort_keys=True).encode()).hexdigest()
    log = _open_work(output, {"format": WORK_FORMAT, "fingerprint": fingerprint, **fingerprint_of})
    try:
        todo = [(unit, doc) for unit, doc in units if unit not in log.records]
        for n, rows in system.predict([(doc, docs[i]) for (i, _), doc in todo], progress=progress):
            (i, seed), doc = todo[n]
            log.append({"doc": i, "seed": seed, "key": doc.key, "predictions": rows})
    finally:
        log.close()
    predictions = {unit: log.records[unit]["predictions"] for unit, _ in units}
    result = compare_copies(docs, renamed, predictions, seeds, top=top, entity_bin=entity_bin)
    if gold is not None:
        original_rows = [row for i in range(len(docs)) for row in predictions[(i, None)]]
        copy_rows = [row for i in range(len(docs)) for seed in seeds for row in predictions[(i, seed)]]
        copy_docs = [renamed[i][c] for c in range(len(seeds)) for i in range(len(docs))]
        result.gold = robustness_report(original_rows, docs, copy_rows, copy_docs, train)
    recorded = {k: v for k, v in fingerprint_of.items() if k in ("top_k", "autocast")}
    result.settings = {"system": {"kind": system.kind, "name": system.name}, **(settings or {}), **recorded,
                       "fingerprint": fingerprint}  # fmt: skip
    write_probe(result, output, predictions if save_predictions else None)
    shutil.rmtree(output / WORK_DIR)
    return result


def write_probe(
    result: ProbeResult, output_dir: str | os.PathLike, predictions: Mapping[Unit, Sequence[Mapping[str, Any]]] | None = None
) -> dict[str, Path]:
    """``probe.json`` (written last: it marks the probe finished), ``report.md``, the plot and, given
    ``predictions``, one official-format file for the originals and one per copy's seed."""
    out = Path(output_dir)
    paths: dict[str, Path] = {}
    if predictions is not None:
        n = result.documents
        paths["original"] = write_json(
            out / PREDICTIONS_DIR / "original.json", [row for i in range(n) for row in predictions[(i, None)]], indent=None
        )
        for seed in result.seeds:
            paths[f"seed {seed}"] = write_json(
                out / PREDICTIONS_DIR / f"seed-{seed}.json", [row for i in range(n) for row in predictions[(i, seed)]],
                indent=None,
            )  # fmt: skip
    relations = [(r, row) for r, row in result.breakdowns["by_relation"].items() if row["facts"]][:PLOT_RELATIONS]
    paths["plot"] = plot_flip_rates(
        {f"{r} {row['relation']} ({row['facts']})": row["flip_rate"] for r, row in relations},
        out / PLOT_FILE,
        title=f"Flip rate of the {len(relations)} relations predicted most often (facts on the originals)",
    )
    paths["report"] = write_text(out / REPORT_FILE, result.to_markdown(PLOT_FILE))
    paths["probe"] = write_json(out / PROBE_FILE, result.to_dict())
    return paths
