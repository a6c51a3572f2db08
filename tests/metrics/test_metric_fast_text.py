"""Files whose text the typed readers take differently from a plain orjson / msgspec parse of the bytes (a
byte-order mark, gzip, NaN, unpaired surrogates, JSON Lines split at Unicode line boundaries): the fast
path must accept exactly what the typed path accepts, score it the same, or raise the same error."""

from __future__ import annotations

import gzip
import json

import pytest

from envre_hf.documents import DocumentError, read_documents
from envre_hf.metrics import PredictionError, read_predictions, read_predictions_fast, score_files, score_predictions
from envre_hf.metrics.cache import ScoringCache


def _doc(title="A", **fields):
    doc = {
        "title": title,
        "sents": [["x", "y", "z"], ["x", "y", "z"]],
        "vertexSet": [
            [{"name": "a", "sent_id": 0, "pos": [0, 1], "type": "PER"}],
            [{"name": "b", "sent_id": 1, "pos": [1, 3], "type": "ORG"}],
        ],
        "labels": [{"h": 0, "t": 1, "r": "P17", "evidence": [0, 1]}],
    }
    doc.update(fields)
    return doc


PREDS = [{"title": "A", "h_idx": 0, "t_idx": 1, "r": "P17", "evidence": [1]}, {"title": "A", "h_idx": 1, "t_idx": 0, "r": "P17"}]
BOM = b"\xef\xbb\xbf"


def _lines(objs, sep="\n", **options):
    return sep.join(json.dumps(o, **options) for o in objs).encode() + b"\n"


def _with_token(token):
    doc = _doc()
    doc["sents"][0][0] = token
    return doc


def _with_mention_field(value):
    doc = _doc()
    doc["vertexSet"][0][0]["note"] = value
    return doc


# name -> (file name, bytes) of the gold file, the training file or the prediction file
CASES = {
    "gold with a byte-order mark": ("gold", "g.json", BOM + json.dumps([_doc()]).encode()),
    "gold with NaN in an extra field": ("gold", "g.json", json.dumps([_doc()]).encode()[:-2] + b', "x": NaN}]'),
    "gold with an unpaired surrogate in a token": ("gold", "g.json", json.dumps([_with_token("\ud800")]).encode()),
    "gold with an unpaired surrogate in a mention's extra field": (
        "gold", "g.json", json.dumps([_with_mention_field("\udc00")]).encode(),
    ),
    "gold JSON Lines with U+2028 in a token": ("gold", "g.jsonl", _lines([_with_token("a\u2028b")], ensure_ascii=False)),
    "gold JSON Lines with U+0085 in a mention's extra field": (
        "gold", "g.jsonl", _lines([_with_mention_field("a\x85b")], ensure_ascii=False),
    ),
    "gold JSON Lines ending a line with a form feed": ("gold", "g.jsonl", _lines([_doc(), _doc("B")], sep="\x0c\n")),
    "gold with a byte that is not UTF-8 in a mention's extra field": (
        "gold", "g.json", json.dumps([_with_mention_field("@")]).encode().replace(b'"@"', b'"\xff"'),
    ),
    "gold with a UTF-8-encoded surrogate in a label's extra field": (
        "gold", "g.json", json.dumps([_doc()]).encode().replace(b'"P17"', b'"P17", "note": "\xed\xa0\x80"'),
    ),
    "gold nested 3000 deep in a mention's extra field": (
        "gold", "g.json", json.dumps([_doc()]).encode().replace(b'"PER"', b'"PER", "deep": ' + b"[" * 3000 + b"]" * 3000),
    ),
    "gold JSON Lines nested 3000 deep in a token": (
        "gold", "g.jsonl", _lines([_doc()]).replace(b'"y"', b"[" * 3000 + b"]" * 3000, 1),
    ),
    "gold that is not valid JSON": ("gold", "g.json", b'[{"title": }]'),
    "training file with a byte-order mark": ("train", "t.json", BOM + json.dumps([_doc("T")]).encode()),
    "training JSON Lines with U+2028 in a token": ("train", "t.jsonl", _lines([_doc("T", sents=[["a\u2028b", "y", "z"]] * 2)], ensure_ascii=False)),
    "predictions with a byte-order mark": ("preds", "p.json", BOM + json.dumps(PREDS).encode()),
    "gzipped predictions": ("preds", "p.json.gz", gzip.compress(json.dumps(PREDS).encode())),
    "gzipped prediction lines": ("preds", "p.jsonl.gz", gzip.compress(_lines(PREDS))),
    "predictions with NaN scores": ("preds", "p.json", json.dumps([dict(p, score=float("nan")) for p in PREDS]).encode()),
    "predictions with an unpaired surrogate": ("preds", "p.json", json.dumps([dict(p, note="\ud800") for p in PREDS]).encode()),
    "prediction lines with U+2028 in a string": ("preds", "p.jsonl", _lines([dict(p, note="a\u2028b") for p in PREDS], ensure_ascii=False)),
    "prediction lines ending with a form feed": ("preds", "p.jsonl", _lines(PREDS, sep="\x0c\n")),
    "predictions with a byte that is not UTF-8 in an extra field": (
        "preds", "p.json", json.dumps([dict(p, note="@") for p in PREDS]).encode().replace(b'"@"', b'"\xff"'),
    ),
    "prediction lines with a byte that is not UTF-8 in a key": (
        "preds", "p.jsonl", _lines([dict(p, note=1) for p in PREDS]).replace(b'"note"', b'"\xc3"'),
    ),
    "predictions with an entity index past 64 bits": (
        "preds", "p.json", json.dumps([PREDS[0], dict(PREDS[1], h_idx=2**64)]).encode(),
    ),
    "predictions with a negative entity index past 64 bits": (
        "preds", "p.jsonl", _lines([PREDS[0], dict(PREDS[1], t_idx=-(2**70))]),
    ),
    "predictions with evidence past 64 bits and an unknown document": (
        "preds", "p.json", json.dumps([dict(PREDS[0], evidence=[2**70]), dict(PREDS[1], title="Q")]).encode(),
    ),
    "predictions nested 3000 deep in an extra field": (
        "preds", "p.json", json.dumps(PREDS).encode()[:-2] + b', "deep": ' + b"[" * 3000 + b"]" * 3000 + b"}]",
    ),
    "prediction lines nested 3000 deep": ("preds", "p.jsonl", _lines(PREDS) + b"[" * 3000 + b"]" * 3000 + b"\n"),
    "predictions that are not valid JSON": ("preds", "p.json", b'[{"title": "A",]'),
    "prediction lines that are not valid JSON": ("preds", "p.jsonl", b'{"title": "A"}\n{oops\n'),
}


def _outcome(score):
    try:
        return "ok", score().to_dict()
    except (DocumentError, PredictionError) as err:
        return type(err).__name__, str(err)


@pytest.mark.parametrize("case", sorted(CASES))
def test_files_the_typed_readers_take_differently_from_orjson(case, tmp_path):
    kind, name, data = CASES[case]
    paths = {"gold": tmp_path / "g.json", "train": tmp_path / "t.json", "preds": tmp_path / "p.json"}
    paths[kind] = tmp_path / name
    contents = {"gold": json.dumps([_doc()]).encode(), "train": json.dumps([_doc("T")]).encode(), "preds": json.dumps(PREDS).encode()}
    contents[kind] = data
    for k, path in paths.items():
        path.write_bytes(contents[k])
    gold, train, preds = paths["gold"], paths["train"], paths["preds"]
    for unknown in (False, True):
        typed = _outcome(
            lambda: score_predictions(
                read_predictions(preds), read_documents(gold), read_documents(train), allow_unknown_documents=unknown
            )
        )
        cache = ScoringCache(tmp_path / f"cache-{unknown}")
        for option in (None, cache, cache):  # no cache, a cold cache, a warm one
            assert _outcome(lambda: score_files(preds, gold, train, cache=option, allow_unknown_documents=unknown)) == typed
    if kind == "preds":
        try:
            expected = ("ok", read_predictions(preds))
        except PredictionError as err:
            expected = ("PredictionError", str(err))
        try:
            assert ("ok", read_predictions_fast(preds)) == expected
        except PredictionError as err:
            assert ("PredictionError", str(err)) == expected


@pytest.mark.parametrize("kind", ["gold", "train"])
@pytest.mark.parametrize("first, second", [("d.jsonl", "d.json"), ("d.json", "d.jsonl"), ("d.jsonl.gz", "d.json.gz")])
def test_the_cache_tells_the_same_bytes_read_as_a_list_from_the_same_bytes_read_as_lines(kind, first, second, tmp_path):
    """The file name says how its bytes are read (a JSON list, or JSON Lines): the same bytes can be a valid
    file under one name and an invalid one under the other, so the cache must not hand one's index to the other."""
    docs = [_doc(), _doc("B")] if kind == "gold" else [_doc("T"), _doc("U")]
    jsonl = first.startswith("d.jsonl")
    data = _lines(docs) if jsonl else json.dumps(docs).encode()
    if first.endswith(".gz"):
        data = gzip.compress(data)
    (tmp_path / first).write_bytes(data)
    (tmp_path / second).write_bytes(data)
    preds = tmp_path / "p.json"
    preds.write_bytes(json.dumps(PREDS).encode())
    gold, train = tmp_path / "g.json", tmp_path / "t.json"
    gold.write_bytes(json.dumps([_doc()]).encode())
    train.write_bytes(json.dumps([_doc("T")]).encode())
    files = {"gold": gold, "train": train}
    cache = ScoringCache(tmp_path / "cache")
    for name in (first, second):
        files[kind] = tmp_path / name
        typed = _outcome(lambda: score_predictions(read_predictions(preds), read_documents(files["gold"]), read_documents(files["train"])))
        assert _outcome(lambda: score_files(preds, files["gold"], files["train"], cache=cache)) == typed, name
    assert typed[0] == "DocumentError"  # the second name does not read these bytes


@pytest.mark.parametrize("name", ["g.json.gz", "g.jsonl.gz", "g.json"])
def test_a_file_the_typed_reader_reads_is_not_cached_under_the_digest_of_other_bytes(name, tmp_path, monkeypatch):
    """The typed reader reads the file again: if it changed after the fast path hashed it, the index of the new
    content must not be stored under the old content's digest."""
    from envre_hf.metrics import fast_io, read_gold_index

    old = _lines([_doc()]) if "jsonl" in name else BOM + json.dumps([_doc()]).encode()  # a BOM: the typed reader reads it
    new = old.replace(b'"P17"', b'"P131"')
    if name.endswith(".gz"):
        old, new = gzip.compress(old), gzip.compress(new)
    path = tmp_path / name
    path.write_bytes(old)
    typed_reader = fast_io.read_documents

    def rewritten_first(p):
        path.write_bytes(new)
        return typed_reader(p)

    monkeypatch.setattr(fast_io, "read_documents", rewritten_first)
    cache = ScoringCache(tmp_path / "cache")
    with pytest.raises(DocumentError, match="changed while it was being scored"):
        read_gold_index(path, cache=cache)
    monkeypatch.setattr(fast_io, "read_documents", typed_reader)
    assert set(read_gold_index(path, cache=cache).labels) == {("A", 0, 1, "P131")}


@pytest.mark.parametrize("jsonl", [False, True])
def test_decoded_predictions_keep_the_first_occurrences_evidence(jsonl, tmp_path):
    """_tally_columns de-duplicates from the reversed columns: the first occurrence's evidence is the one scored,
    however the repeats are placed (next to each other, apart, three times), as the typed path does."""
    from envre_hf.metrics import fast_io
    from envre_hf.metrics.docre import GoldIndex, TrainFacts

    gold = tmp_path / "g.json"
    label = _doc()["labels"][0]
    docs = [_doc(labels=[dict(label, evidence=[0])]), _doc("B", labels=[dict(label, evidence=[1])])]
    gold.write_bytes(json.dumps(docs).encode())
    a, b = dict(PREDS[0], evidence=[0]), dict(PREDS[0], title="B", evidence=[1])  # correct, with the right evidence
    submissions = [  # (predicted, correct) evidence when the first occurrence is kept: (3, 2), (1, 1), (1, 0), (2, 1), (3, 1)
        [a, dict(b, evidence=[0, 1])],  # no repeat: each prediction keeps its own evidence
        [a, dict(a, evidence=[1])],
        [dict(a, evidence=[1]), a],
        [dict(a, evidence=None), dict(b, evidence=[0, 1]), a, b],
        [dict(b, evidence=[0]), dict(a, evidence=[0, 1]), dict(b, evidence=[]), b, a],
    ]
    docs = read_documents(gold)
    index, facts = GoldIndex(docs), TrainFacts.from_documents(docs)
    seen = set()
    for submission in submissions:
        path = tmp_path / ("p.jsonl" if jsonl else "p.json")
        path.write_bytes(_lines(submission) if jsonl else json.dumps(submission).encode())
        decoded = fast_io._score_decoded(path, path.read_bytes(), index, facts)
        typed = score_predictions(read_predictions(path), docs, docs)
        assert decoded is not None and decoded.to_dict() == typed.to_dict() == score_files(path, gold, gold).to_dict()
        seen.add((typed.num_predicted_evidence, typed.num_correct_evidence))
    assert len(seen) == len(submissions)  # the evidence kept differs from one submission to the next
