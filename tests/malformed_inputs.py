"""A generator of malformed inputs for the reliability campaign (tests/cli/test_reliability.py).

Each generator writes files into a folder and returns ``{case name: path}``. Every case is something a
user or an attacker can hand to ``envre``: broken containers (not JSON, not UTF-8, not gzip, nested 200k
deep), broken documents (each field missing, mistyped or out of range), collections that are wrong as a
whole (duplicate keys), and broken prediction files. None of them may produce a traceback, a silently
wrong result, or an exit status other than 2.
"""

from __future__ import annotations

import copy
import gzip
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

SAMPLES = Path(__file__).resolve().parents[1] / "envre_hf" / "samples"
SAMPLE_DOCS = SAMPLES / "sample_docs.json"
SAMPLE_PREDICTIONS = SAMPLES / "sample_predictions.json"
SAMPLE_TRAIN = SAMPLES / "sample_train.json"

Doc = dict[str, Any]


def sample_documents() -> list[Doc]:
    return json.loads(SAMPLE_DOCS.read_text(encoding="utf-8"))


def _set(path: tuple, value: Any) -> Callable[[Doc], None]:
    """A mutation setting ``doc[path[0]][path[1]]... = value``."""

    def mutate(doc: Doc) -> None:
        target = doc
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return mutate


def _delete(path: tuple) -> Callable[[Doc], None]:
    def mutate(doc: Doc) -> None:
        target = doc
        for key in path[:-1]:
            target = target[key]
        del target[path[-1]]

    return mutate


#: One broken field per case, applied to the second document of the sample (so the first one is fine and
#: a reader that stops early, or scores part of a file, is caught).
DOCUMENT_MUTATIONS: dict[str, Callable[[Doc], None]] = {
    "title_missing": _delete(("title",)),
    "title_int": _set(("title",), 7),
    "title_list": _set(("title",), ["a"]),
    "sents_missing": _delete(("sents",)),
    "sents_empty": _set(("sents",), []),
    "sents_string": _set(("sents",), "one two"),
    "sentence_string": _set(("sents", 0), "one two"),
    "token_int": _set(("sents", 0, 0), 5),
    "vertexset_missing": _delete(("vertexSet",)),
    "vertexset_dict": _set(("vertexSet",), {"a": 1}),
    "entity_not_list": _set(("vertexSet", 0), {"name": "x"}),
    "entity_no_mentions": _set(("vertexSet", 0), []),
    "mention_not_object": _set(("vertexSet", 0, 0), "x"),
    "mention_name_missing": _delete(("vertexSet", 0, 0, "name")),
    "mention_type_empty": _set(("vertexSet", 0, 0, "type"), ""),
    "pos_missing": _delete(("vertexSet", 0, 0, "pos")),
    "pos_three_items": _set(("vertexSet", 0, 0, "pos"), [0, 1, 2]),
    "pos_strings": _set(("vertexSet", 0, 0, "pos"), ["0", "1"]),
    "pos_bools": _set(("vertexSet", 0, 0, "pos"), [False, True]),
    "pos_empty_span": _set(("vertexSet", 0, 0, "pos"), [1, 1]),
    "pos_negative": _set(("vertexSet", 0, 0, "pos"), [-1, 1]),
    "pos_past_sentence": _set(("vertexSet", 0, 0, "pos"), [0, 999]),
    "sent_id_negative": _set(("vertexSet", 0, 0, "sent_id"), -1),
    "sent_id_past_end": _set(("vertexSet", 0, 0, "sent_id"), 99),
    "sent_id_string": _set(("vertexSet", 0, 0, "sent_id"), "0"),
    "sent_id_float": _set(("vertexSet", 0, 0, "sent_id"), 0.5),
    "labels_int": _set(("labels",), 5),
    "label_not_object": _set(("labels", 0), [0, 1]),
    "label_h_negative": _set(("labels", 0, "h"), -1),
    "label_h_past_end": _set(("labels", 0, "h"), 999),
    "label_t_string": _set(("labels", 0, "t"), "1"),
    "label_r_unknown": _set(("labels", 0, "r"), "P99999"),
    "label_r_int": _set(("labels", 0, "r"), 17),
    "evidence_string": _set(("labels", 0, "evidence"), "0"),
    "evidence_past_end": _set(("labels", 0, "evidence"), [99]),
    "doc_id_list": _set(("doc_id",), ["a", "b"]),
    "doc_id_int": _set(("doc_id",), 3),
    "seed_string": _set(("seed",), "0"),
    "wikidata_ids_wrong_length": _set(("entity_wikidata_ids",), ["Q1"]),
    "substitutions_ints": _set(("substitutions",), [1, 2]),
}


def _duplicate_label(doc: Doc) -> None:
    doc["labels"].append(dict(doc["labels"][0]))


DOCUMENT_MUTATIONS["label_duplicate"] = _duplicate_label


def malformed_document_files(folder: Path) -> dict[str, Path]:
    """Every malformed document file (see the module doc); the names say what is wrong."""
    folder.mkdir(parents=True, exist_ok=True)
    cases: dict[str, bytes] = {}
    good = sample_documents()
    for name, mutate in DOCUMENT_MUTATIONS.items():
        docs = copy.deepcopy(good)
        mutate(docs[1])
        cases[f"{name}.json"] = json.dumps(docs).encode()
    text = json.dumps(good)
    duplicate_title = copy.deepcopy(good) + [copy.deepcopy(good[0])]
    duplicate_id = copy.deepcopy(good)
    for doc in duplicate_id:
        doc["doc_id"] = "same"
    cases.update(
        {
            "empty.json": b"",
            "truncated.json": text[: len(text) // 2].encode(),
            "null.json": b"null",
            "number.json": b"42",
            "string.json": b'"documents"',
            "list_of_numbers.json": b"[1, 2, 3]",
            "empty_object.json": b"{}",
            "nested_brackets.json": b"[" * 200_000 + b"]" * 200_000,
            "latin1.json": text.replace("Orchestra", "Orch\u00e9stra").encode("latin-1", errors="replace"),
            "utf16.json": text.encode("utf-16"),
            "duplicate_titles.json": json.dumps(duplicate_title).encode(),
            "duplicate_doc_ids.json": json.dumps(duplicate_id).encode(),
            "bad_line.jsonl": (json.dumps(good[0]) + "\n{not json\n").encode(),
            "not_gzip.json.gz": text.encode(),
            "gzip_of_truncated.jsonl.gz": gzip.compress(json.dumps(good[0]).encode()[:100]),
            "linked_unknown_entity.json": json.dumps(
                [{"title": "L", "sents": [["a", "b"]], "entities": [{"id": 0, "type": "PER",
                  "mentions": [{"name": "a", "sent_id": 0, "pos": [0, 1]}]}],
                  "relations": [{"r": "P17", "h": 0, "t": 5, "evidence": []}]}]
            ).encode(),
            "linked_duplicate_entity_id.json": json.dumps(
                [{"title": "L", "sents": [["a", "b"]], "entities": [
                    {"id": 0, "type": "PER", "mentions": [{"name": "a", "sent_id": 0, "pos": [0, 1]}]},
                    {"id": 0, "type": "PER", "mentions": [{"name": "b", "sent_id": 0, "pos": [1, 2]}]}]}]
            ).encode(),
        }
    )
    out = {}
    for name, data in cases.items():
        path = folder / name
        path.write_bytes(data)
        out[name] = path
    return out


def malformed_prediction_files(folder: Path) -> dict[str, Path]:
    """Every malformed prediction file, for the gold documents of :data:`SAMPLE_DOCS`."""
    folder.mkdir(parents=True, exist_ok=True)
    good = json.loads(SAMPLE_PREDICTIONS.read_text(encoding="utf-8"))

    def with_first(**change: Any) -> bytes:
        preds = copy.deepcopy(good)
        for key, value in change.items():
            if value is _DROP:
                preds[0].pop(key, None)
            else:
                preds[0][key] = value
        return json.dumps(preds).encode()

    cases = {
        "empty.json": b"",
        "null.json": b"null",
        "object.json": json.dumps(good[0]).encode(),
        "list_of_numbers.json": b"[1, 2]",
        "truncated.json": json.dumps(good).encode()[:50],
        "nested_brackets.json": b"[" * 200_000 + b"]" * 200_000,
        "latin1.json": json.dumps(good).replace("Orchestra", "Orch\u00e9stra").encode("latin-1", errors="replace"),
        "bad_line.jsonl": (json.dumps(good[0]) + "\n[oops\n").encode(),
        "title_missing.json": with_first(title=_DROP),
        "title_unknown.json": with_first(title="No Such Document"),
        "title_list.json": with_first(title=["a"]),
        "doc_id_list.json": with_first(title=_DROP, doc_id=["a", "b"]),
        "doc_id_object.json": with_first(title=_DROP, doc_id={"a": 1}),
        "h_idx_missing.json": with_first(h_idx=_DROP),
        "h_idx_string.json": with_first(h_idx="0"),
        "h_idx_negative.json": with_first(h_idx=-1),
        "h_idx_past_end.json": with_first(h_idx=99),
        "t_idx_bool.json": with_first(t_idx=True),
        "t_idx_float.json": with_first(t_idx=1.5),
        "r_missing.json": with_first(r=_DROP),
        "r_int.json": with_first(r=5),
        "evidence_string.json": with_first(evidence="0"),
        "evidence_objects.json": with_first(evidence=[{"a": 1}]),
    }
    out = {}
    for name, data in cases.items():
        path = folder / name
        path.write_bytes(data)
        out[name] = path
    return out


class _Drop:
    def __repr__(self) -> str:
        return "<drop>"


_DROP = _Drop()
