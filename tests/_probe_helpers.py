"""Shared by the probe's tests: extractors for ``envre probe --extractor _probe_helpers:NAME`` (two that keep the
contract, one reading names and one not, and ones that break it) and the check of a one-line error."""

from __future__ import annotations

import zlib

#: Documents the extractors were called with (their doc_id), in call order.
CALLS: list[str] = []
#: While True, ``flaky`` fails on the copies of seed 1 (the test "fixes" it by setting this False).
BROKEN = False


def one_error_line(capsys) -> str:
    """The one line of stderr besides progress bars (transformers' "Loading weights" bar comes before the error)."""
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip() and "%|" not in line]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def _name(entity: list[dict]) -> str:
    return entity[0]["name"]


def by_names(document: dict) -> list[dict]:
    """Relates the first 6 entities pairwise when a checksum of their two first names says so: renaming changes it."""
    CALLS.append(document.get("doc_id") or document["title"])
    entities = document["vertexSet"][:6]
    return [
        {"h_idx": h, "t_idx": t, "r": "P17", "score": 0.5}
        for h in range(len(entities))
        for t in range(len(entities))
        if h != t and zlib.crc32(f"{_name(entities[h])}|{_name(entities[t])}".encode()) % 3 == 0
    ]


def by_sentence(document: dict):
    """Relates entities with a mention in the same sentence (a generator): names play no part."""
    sentences = [{m["sent_id"] for m in entity} for entity in document["vertexSet"]]
    for h, hs in enumerate(sentences):
        for t, ts in enumerate(sentences):
            if h != t and hs & ts:
                yield {"h_idx": h, "t_idx": t, "r": "P131"}


def flaky(document: dict) -> list[dict]:
    if BROKEN and str(document.get("doc_id", "")).endswith("#1"):
        raise RuntimeError("model server went away")
    return by_names(document)


not_callable = 42


def returns_none(document: dict) -> None:
    return None


def returns_one_dict(document: dict) -> dict:
    return {"h_idx": 0, "t_idx": 1, "r": "P17"}


def index_out_of_range(document: dict) -> list[dict]:
    return [{"h_idx": 0, "t_idx": len(document["vertexSet"]), "r": "P17"}]


def unknown_relation(document: dict) -> list[dict]:
    return [{"h_idx": 0, "t_idx": 1, "r": "country"}]


def bad_score(document: dict) -> list[dict]:
    return [{"h_idx": 0, "t_idx": 1, "r": "P17", "score": "high"}]


def reads_labels(document: dict) -> list[dict]:
    """Fails when the document it is given carries labels or renaming provenance (the probe never passes them)."""
    leaked = {"labels", "substitutions", "orig_title", "seed"} & set(document)
    if leaked:
        raise AssertionError(f"the extractor was given {sorted(leaked)}")
    return []
