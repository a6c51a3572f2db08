"""The dataset card (``README.md``) of a built benchmark folder: the YAML header the Hub and
``datasets.load_dataset(folder)`` read (configs, features, split sizes), and a body written from
``statistics.json``, so the card always describes the splits actually in the folder.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from ..citations import DOCRED_CITATION, ENV_CITATION, REDOCRED_CITATION
from ..documents import DOCUMENT_FEATURES, ENTITY_TYPES
from ..documents.build_folder import STATISTICS_FILE
from ..atomic import write_text

#: What a card built on DocRED / Re-DocRED cites.
CITATION = "\n\n".join((ENV_CITATION, DOCRED_CITATION, REDOCRED_CITATION))


def default_pretty_name(input_path: str | os.PathLike) -> str:
    """Env-Re-DocRED for Re-DocRED inputs (``*_revised.json``), Env-DocRED otherwise."""
    name = Path(input_path).name.lower()
    return "Env-Re-DocRED" if "revised" in name or "redocred" in name else "Env-DocRED"


def card_metadata(statistics: dict[str, dict[str, Any]], *, pretty_name: str, license: str) -> dict[str, Any]:
    """The YAML header as a dict (``configs`` + ``dataset_info`` in the form ``datasets`` writes them)."""
    from datasets import DatasetInfo, SplitDict, SplitInfo
    from datasets.info import DatasetInfosDict
    from datasets.utils.metadata import MetadataConfigs
    from huggingface_hub import DatasetCardData

    card_data = DatasetCardData(
        license=license,
        pretty_name=pretty_name,
        language=["en"],
        task_categories=["text-classification"],
        tags=["relation-extraction", "document-level-relation-extraction", "robustness", "docred"],
        size_categories=[_size_category(sum(s["renamed_documents"] for s in statistics.values()))],
    )
    configs = {"default": [{"split": split, "path": f"data/{split}-*"} for split in statistics]}
    for split, stats in statistics.items():  # seed<k> / original: config -> the splits that have it
        for name in stats.get("config_data_files", {}):
            configs.setdefault(name, []).append({"split": split, "path": f"data/{name}/{split}-*"})
    MetadataConfigs({name: {"data_files": files} for name, files in configs.items()}).to_dataset_card_data(card_data)
    infos = {}
    for name, files in configs.items():
        splits = SplitDict()
        for entry in files:
            stats = statistics[entry["split"]]
            if name == "default":
                rows, size = stats["renamed_documents"], stats.get("num_bytes", 0)
            else:
                rows, size = stats.get("config_rows", {}).get(name, 0), 0
            splits.add(SplitInfo(name=entry["split"], num_bytes=size, num_examples=rows))
        infos[name] = DatasetInfo(features=DOCUMENT_FEATURES, splits=splits)
    DatasetInfosDict(infos).to_dataset_card_data(card_data)
    return card_data.to_dict()


def _size_category(rows: int) -> str:
    for limit, label in ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M")):
        if rows < limit:
            return label
    return "1M<n<10M"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def statistics_markdown(split: str, stats: dict[str, Any]) -> list[str]:
    """One split's construction statistics as Markdown lines (the card's section, also printed by the CLI)."""
    rates = stats["substitution_rates"]
    matches = stats["type_matches"]
    lines = [
        f"### `{split}`",
        "",
        f"{stats['source_documents']} source documents x seeds {stats['seeds']} = "
        f"{stats['renamed_documents']} renamed documents; {stats['failed']} (document, seed) pairs not renamed "
        f"({stats['failed_documents']} documents{', see `errors/' + split + '.jsonl`' if stats['failed'] else ''}).",
        f"Knowledge base: `{stats['kb']['name']}`, snapshot `{stats['kb']['snapshot']}`. "
        f"Input: `{stats['input']['path']}` (sha256 `{stats['input']['sha256'][:16]}...`).",
        "",
        "| type | entities | substituted | rate | exact type | relaxed type | rule-made |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    by_type = stats.get("type_matches_by_type", {})
    total = {kind: sum(row.get(kind, 0) for row in by_type.values()) for kind in ("exact", "relaxed", "rule")}
    order = [t for t in (*ENTITY_TYPES, "ALL") if t in rates] + sorted(set(rates) - {*ENTITY_TYPES, "ALL"})
    for etype in order:
        row = rates[etype]
        kinds = total if etype == "ALL" else by_type.get(etype, {})
        made = " | ".join(str(kinds.get(kind, 0)) for kind in ("exact", "relaxed", "rule"))
        lines.append(f"| {etype} | {row['entities']} | {row['substituted']} | {_pct(row.get('rate'))} | {made} |")
    kinds = ", ".join(f"{kind}: {n}" for kind, n in matches.items())
    lines += [
        "",
        "*exact type*: the new item has the entity's fine-grained KB type; *relaxed type*: only a broader one "
        "(`relaxed:<how>`, e.g. the coarse type), so its relations may no longer hold; *rule-made*: a new NUM/TIME "
        "value.",
        f"Entities by type match (exact / relaxed KB type, rule-based value, unchanged with reason): {kinds}.",
    ]
    leaks = ", ".join(f"{k}: {v}" for k, v in stats["leaks"].items())
    lines += [f"Leaks (unannotated original names left in the renamed text): {leaks}. "
              f"New names used: {stats['names_used']}."]
    lines += coherence_markdown(stats.get("coherence"))
    if config := stats.get("renaming_config"):
        shown = ", ".join(
            f"{key}: {value['count']} names" if isinstance(value, dict) and "count" in value else f"{key}={value}"
            for key, value in config.items()
        )
        lines.append(f"Renaming config: {shown}.")
    lines.append("")
    return lines


def coherence_markdown(coherence: dict[str, Any] | None) -> list[str]:
    """The text-coherence line of a split (year ranges, lifetimes, demonyms, articles); none for old statistics."""
    if not coherence:
        return []
    yr, lt, dm, ar = (coherence[k] for k in ("year_ranges", "lifetimes", "demonyms", "articles"))
    reasons = ", ".join(f"{k}: {v}" for k, v in dm.get("unchanged_reasons", {}).items())
    return [
        f"Text coherence: year ranges running backwards {yr['reversed']} of {yr['ranges']} "
        f"({yr['reversed_in_source']} already in the source); lifetimes inverted {lt['inverted']} of "
        f"{lt['lifetimes']} ({lt['inverted_in_source']} in the source, {lt['length_changed']} changed length); "
        f"demonym mentions given a demonym {dm['demonym']} of {dm['mentions']} ({_pct(dm.get('rate'))}; "
        f"{dm['not_demonym']} given another name, {dm['unchanged']} unchanged{': ' + reasons if reasons else ''}); "
        f"a/an before new names agreeing {ar['agree']} of {ar['before_new_names']} ({_pct(ar.get('rate'))}, "
        f"{ar['adjusted']} adjusted)."
    ]


def card_body(statistics: dict[str, dict[str, Any]], *, pretty_name: str, repo_id: str | None) -> str:
    where = repo_id or "path/to/this/folder"
    lines = [
        f"# {pretty_name}",
        "",
        f"{pretty_name} tests how document-level relation extraction models cope with entity name variations: "
        "each source document is renamed once per seed by the envre-hf renaming pipeline, which links every "
        "entity to a knowledge-base item, takes its fine-grained type, draws another item of that type with enough "
        "names and substitutes all mentions alias-wise (NUM and TIME get rule-based new values). Relation labels, "
        "entity types, evidence and coreference are unchanged, so scores on the renamed copies are directly "
        "comparable with scores on the source documents.",
        "",
        "## Splits",
        "",
        "| split | rows | source documents | seeds |",
        "| --- | ---: | ---: | --- |",
    ]
    for split, stats in statistics.items():
        lines.append(
            f"| {split} | {stats['renamed_documents']} | {stats['source_documents']} | "
            f"{', '.join(map(str, stats['seeds']))} |"
        )
    lines += [
        "",
        "Configs: `default` holds every seed; `seed0`, `seed1`, ... one seed each; `original` the unrenamed source "
        "documents. Rows follow the source order, document by document, one row per seed. `doc_id` is "
        "`<source key>#<seed>`, `original_doc_id` the source document's title (the same in `original`: join a copy "
        "to its original on it), `orig_title` and `seed` give the provenance and `substitutions` lists every "
        "renamed entity "
        "(`item_id`, `fine_type`, `original_name`, `new_name`, `match`: `exact`, `relaxed:<how>` or `rule`), "
        "plus one `unchanged:<reason>` record per entity left as it was.",
        "",
        "## Construction statistics",
        "",
    ]
    for split, stats in statistics.items():
        lines += statistics_markdown(split, stats)
    lines += [
        "`names_used.json` lists the new names of each split: pass it to `envre build --exclude-names-from` so "
        "another build (e.g. a renamed training set) never reuses them.",
        "",
        "## How to load",
        "",
        "```python",
        "from datasets import load_dataset",
        "from envre_hf.documents import dataset_to_documents",
        "",
        f'ds = load_dataset("{where}")                  # every seed',
        f'seed0 = load_dataset("{where}", "seed0")["{next(iter(statistics))}"]',
        f'original = load_dataset("{where}", "original")["{next(iter(statistics))}"]',
        "docs = dataset_to_documents(seed0)   # typed envre_hf Documents, DocRED JSON via envre_hf.documents.to_docred",
        "```",
        "",
        "## Citation",
        "",
        "```bibtex",
        CITATION,
        "```",
        "",
    ]
    return "\n".join(lines)


def write_dataset_card(
    output_dir: str | os.PathLike,
    *,
    pretty_name: str = "Env-Re-DocRED",
    license: str = "mit",
    repo_id: str | None = None,
) -> Path:
    """(Re)write ``output_dir/README.md`` (atomically) from ``output_dir/statistics.json`` and the parquet sizes
    (``data_files`` entries that are not files of the folder, as people may edit them in, count nothing)."""
    import yaml
    from huggingface_hub import DatasetCard

    folder = Path(output_dir)
    statistics = json.loads((folder / STATISTICS_FILE).read_text(encoding="utf-8"))
    for stats in statistics.values():
        paths = [folder / f for f in stats["data_files"] if isinstance(f, str)]
        stats["num_bytes"] = sum(path.stat().st_size for path in paths if path.is_file())
    metadata = card_metadata(statistics, pretty_name=pretty_name, license=license)
    header = yaml.safe_dump(metadata, sort_keys=False, allow_unicode=True)
    text = str(DatasetCard(f"---\n{header}---\n\n{card_body(statistics, pretty_name=pretty_name, repo_id=repo_id)}"))
    return write_text(folder / "README.md", text)
