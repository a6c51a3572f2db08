"""Leaderboard submission files: predictions as DocRED's CodaLab leaderboard takes them.

DocRED's test labels are hidden, so test scores come from the leaderboard: one ``result.json`` (a JSON list of
``{"title", "h_idx", "t_idx", "r", "evidence"}``) zipped as ``result.zip``. For an Env-* benchmark (renamed
copies, one per seed) the Env-DocRE authors score each seed's copies as a submission of its own and average the
scores (their ``split_result.py``): the copies keep the original's entity order, so each seed's predictions are
written under the original title into ``seed<k>/result.json`` (and ``seed<k>/result.zip``). ``README.md`` says
what to upload where. Works on unlabelled test files (nothing here reads labels).
"""

from __future__ import annotations

import json
import os
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..atomic import atomic_path, write_text
from ..documents import Document
from .scoring import PredictionError, prediction_reference

RESULT_FILE = "result.json"
ZIP_FILE = "result.zip"
#: The fields of one leaderboard row, in DocRED's order.
FIELDS = ("title", "h_idx", "t_idx", "r", "evidence")
_ZIP_TIME = (1980, 1, 1, 0, 0, 0)  # a fixed timestamp: the same predictions give the same zip bytes


@dataclass(frozen=True)
class SubmissionFile:
    """One file to upload: the seed it holds (``None`` for an unrenamed benchmark) and its paths."""

    seed: int | None
    result: Path
    zip: Path
    rows: int


def submission_rows(predictions: Sequence[Mapping[str, Any]], gold: Sequence[Document]) -> dict[int | None, list[dict]]:
    """Leaderboard rows per seed (``None``: documents that are not renamed copies), each under its original title.

    A prediction names its document by ``doc_id`` (a renamed copy's ``<title>#<seed>``) or by ``title``; one that
    names no document of ``gold`` raises :class:`PredictionError` naming it.
    """
    by_key = {doc.key: doc for doc in gold}
    by_title: dict[str, list[Document]] = {}
    for doc in gold:
        by_title.setdefault(doc.title, []).append(doc)
    out: dict[int | None, list[dict]] = {doc.seed: [] for doc in gold}
    for i, pred in enumerate(predictions):
        doc_id, title = prediction_reference(pred, i)
        doc = by_key.get(doc_id) if doc_id is not None else by_key.get(title)
        if doc is None and doc_id is None and len(by_title.get(title, ())) == 1:
            doc = by_title[title][0]
        if doc is None:
            raise PredictionError("names no document of the gold file", index=i, doc=doc_id or title, field="doc_id")
        row = {"title": doc.orig_title if doc.orig_title is not None else doc.title}
        row.update((key, pred[key]) for key in FIELDS[1:4])
        row["evidence"] = list(pred.get("evidence") or [])
        out[doc.seed].append(row)
    return dict(sorted(out.items(), key=lambda item: -1 if item[0] is None else item[0]))


def write_submission(
    predictions: Sequence[Mapping[str, Any]], gold: Sequence[Document], out_dir: str | os.PathLike, *, gold_name: str
) -> list[SubmissionFile]:
    """Write ``result.json`` + ``result.zip`` (per seed for renamed copies) and ``README.md`` into ``out_dir``."""
    out = Path(out_dir)
    rows = submission_rows(predictions, gold)
    files = []
    for seed, part in rows.items():
        folder = out if seed is None else out / f"seed{seed}"
        folder.mkdir(parents=True, exist_ok=True)
        text = json.dumps(part, ensure_ascii=False)
        result = write_text(folder / RESULT_FILE, text)
        with atomic_path(folder / ZIP_FILE) as tmp, zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as archive:
            # a ZipInfo carries its own compression (stored by default), not the archive's
            archive.writestr(zipfile.ZipInfo(RESULT_FILE, _ZIP_TIME), text, compress_type=zipfile.ZIP_DEFLATED)
        files.append(SubmissionFile(seed, result, folder / ZIP_FILE, len(part)))
    write_text(out / "README.md", _readme(files, gold_name))
    return files


def _readme(files: list[SubmissionFile], gold_name: str) -> str:
    lines = [
        f"# Leaderboard submission for `{gold_name}`",
        "",
        "Each `result.zip` holds one `result.json`: a JSON list of `{title, h_idx, t_idx, r, evidence}` rows, the "
        "format of DocRED's CodaLab leaderboard (the test labels are hidden; upload the zip under *Participate* -> "
        "*Submit*).",
        "",
    ]
    if any(f.seed is not None for f in files):
        lines += [
            "The gold file holds renamed copies (an Env-* benchmark): upload each seed's zip as a submission of its "
            "own and average the scores, as the Env-DocRE authors do. Rows carry the original title, so the "
            "leaderboard matches them with the original documents (the copies keep the entity order).",
            "",
        ]
    lines += ["| upload | seed | rows |", "| --- | --- | ---: |"]
    root = files[0].zip.parent if files[0].seed is None else files[0].zip.parent.parent
    for f in files:
        lines.append(f"| `{f.zip.relative_to(root).as_posix()}` | {'-' if f.seed is None else f.seed} | {f.rows} |")
    return "\n".join(lines) + "\n"
