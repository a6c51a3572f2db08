"""The fast scoring path (orjson, indexes from raw dicts) gives the typed path's scores to the last digit."""

from __future__ import annotations

import json
from pathlib import Path
from dataclasses import replace

import pytest

from _metric_helpers import perturbed

from envre_hf.documents import DocumentError, read_documents, write_documents
from envre_hf.metrics import (
    GoldIndex,
    PredictionError,
    TrainFacts,
    read_gold_index,
    read_predictions,
    read_predictions_fast,
    read_train_facts,
    score_files,
    score_predictions,
)


def _predictions(gold, seed=0):
    """Perturbed predictions that name their documents by title (and doc_id where there is one)."""
    return perturbed(gold, seed, by_title=True)


def test_fast_scores_equal_typed_scores_on_the_test_split(redocred_test_path, redocred_dev_path, tmp_path):
    gold, train = read_documents(redocred_test_path), read_documents(redocred_dev_path)
    preds = _predictions(gold)
    path = tmp_path / "preds.json"
    path.write_text(json.dumps(preds), encoding="utf-8")
    typed = score_predictions(read_predictions(path), gold, train)
    fast = score_files(path, redocred_test_path, redocred_dev_path)
    assert fast.num_correct_in_train > 0 and fast.evidence_f1 is not None and fast.num_duplicates > 0
    assert fast.to_dict() == typed.to_dict()  # every float, to the last digit
    assert read_predictions_fast(path) == read_predictions(path)
    assert score_files(path, redocred_test_path).to_dict() == score_predictions(preds, gold).to_dict()


def test_fast_index_and_facts_equal_typed_ones_with_doc_ids_and_jsonl(redocred_test, tmp_path):
    copies = [replace(d, doc_id=f"{d.title}#{k}") for k in range(2) for d in redocred_test[:60]]
    write_documents(copies, tmp_path / "gold.jsonl")
    fast = read_gold_index(tmp_path / "gold.jsonl")
    typed = GoldIndex(copies)
    for name in ("num_entities", "sentence_masks", "titles", "labels", "num_gold_evidence", "num_gold_intra"):
        assert getattr(fast, name) == getattr(typed, name), name
    assert all(fast.names(key) == typed.names(key) for key in typed.docs)
    records = [json.loads(line) for line in (tmp_path / "gold.jsonl").read_text().splitlines()]
    assert TrainFacts.from_records(records) == TrainFacts.from_documents(copies)
    preds = _predictions(copies, seed=1)
    (tmp_path / "p.jsonl").write_text("\n".join(json.dumps(p) for p in preds) + "\n")
    assert score_files(tmp_path / "p.jsonl", tmp_path / "gold.jsonl", tmp_path / "gold.jsonl").to_dict() == (
        score_predictions(preds, copies, copies).to_dict()
    )


def test_linked_records_go_through_the_typed_reader(redocred_test, tmp_path):
    docs = redocred_test[:5]
    write_documents(docs[:2], tmp_path / "a.json", dialect="linked")
    records = json.loads((tmp_path / "a.json").read_text()) + [
        json.loads(json.dumps(r)) for r in _docred_dicts(docs[2:], tmp_path)
    ]
    fast = GoldIndex.from_records(records)
    assert fast.labels == GoldIndex(docs).labels and fast.sentence_masks == GoldIndex(docs).sentence_masks


def _docred_dicts(docs, tmp_path):
    write_documents(docs, tmp_path / "b.json")
    return json.loads((tmp_path / "b.json").read_text())


@pytest.mark.parametrize(
    "breakage, field",
    [
        (lambda d: d["labels"][0].update(h=999), "h/t"),
        (lambda d: d["labels"][0].update(h=-1), "h/t"),  # a negative head, the tail in range
        (lambda d: d["labels"][0].update(h=len(d["vertexSet"])), "h/t"),  # the first index past the entities
        (lambda d: d["labels"][0].update(evidence=["x"]), "evidence"),
        (lambda d: d["vertexSet"][0][0].update(sent_id="2"), "sent_id"),
        (lambda d: d.pop("title"), "title"),
        (lambda d: d["labels"][0].update(r=None), "r"),
        (lambda d: [label.update(h=str(label["h"])) for label in d["labels"]], "h"),  # every label: no int h left
        (lambda d: d["vertexSet"][0][0].update(name=7), "name"),
    ],
)
def test_bad_gold_records_raise_named_document_errors(redocred_test, tmp_path, breakage, field):
    records = _docred_dicts(redocred_test[:3], tmp_path)
    breakage(records[1])
    with pytest.raises(DocumentError) as err:
        GoldIndex.from_records(records)
    assert err.value.doc_index == 1 and err.value.field == field
    with pytest.raises(DocumentError) as err:  # the training facts read the same records with the same checks
        TrainFacts.from_records(records)
    assert err.value.doc_index == 1 and err.value.field == field
    if field == "h/t":  # found by the fast path, which names the document as the typed reader does
        assert err.value.title == records[1]["title"] and err.value.label == 0


def test_plain_records_are_read_without_typed_documents(redocred_test, tmp_path, monkeypatch):
    """The fast path's point: plain DocRED dicts (with or without doc_id) never go through the typed reader;
    Linked-DocRED ones do, and both readers give the same index and facts."""
    from envre_hf.metrics import docre

    docs = [replace(d, doc_id=f"{d.title}#{k}" if k % 2 else None) for k, d in enumerate(redocred_test[:6])]
    write_documents(docs[:2], tmp_path / "linked.json", dialect="linked")
    linked = json.loads((tmp_path / "linked.json").read_text())
    records = linked + _docred_dicts(docs[2:], tmp_path)
    assert any("doc_id" in r for r in records[2:]) and any("doc_id" not in r for r in records[2:])
    typed_reads = []
    real = docre.from_dict

    def spy(obj, index=None):
        typed_reads.append(index)
        return real(obj, index)

    monkeypatch.setattr(docre, "from_dict", spy)
    index = GoldIndex.from_records(records)
    assert typed_reads == [0, 1]
    facts = TrainFacts.from_records(records)
    assert typed_reads == [0, 1, 0, 1]
    typed = GoldIndex(docs)
    for name in ("num_entities", "sentence_masks", "titles", "labels", "num_gold_evidence", "num_gold_intra"):
        assert getattr(index, name) == getattr(typed, name), name
    assert all(index.names(key) == typed.names(key) for key in typed.docs)
    assert facts == TrainFacts.from_documents(docs) and facts.num_documents == 6


def test_bad_files_raise_named_errors(tmp_path):
    (tmp_path / "bad.json").write_text("[{")
    (tmp_path / "bad.jsonl").write_text('{"title": "a"}\n{oops\n')
    (tmp_path / "obj.json").write_text('{"title": "a"}')
    with pytest.raises(DocumentError, match="bad.json is not valid JSON"):
        read_gold_index(tmp_path / "bad.json")
    with pytest.raises(DocumentError, match="line 2"):
        read_gold_index(tmp_path / "bad.jsonl")
    with pytest.raises(PredictionError, match="expected a JSON list of predictions"):
        read_predictions_fast(tmp_path / "obj.json")
    (tmp_path / "p.json").write_text('[{"title": "a"}, 3]')
    with pytest.raises(PredictionError, match="prediction 1"):
        read_predictions_fast(tmp_path / "p.json")


def test_envre_evaluate_predictions_uses_the_fast_path(redocred_test, tmp_path, capsys):
    from envre_hf.cli.main import main

    gold = redocred_test[:80]
    write_documents(gold, tmp_path / "gold.json")
    preds = _predictions(gold, seed=2)
    (tmp_path / "p.json").write_text(json.dumps(preds))
    argv = ["evaluate", "--predictions", str(tmp_path / "p.json"), "--gold", str(tmp_path / "gold.json")]
    assert main(argv + ["--train", str(tmp_path / "gold.json"), "--output", str(tmp_path / "s.json")]) == 0
    capsys.readouterr()
    written = json.loads((tmp_path / "s.json").read_text())
    assert written == json.loads(json.dumps(score_predictions(preds, gold, gold).to_dict()))


def test_scoring_from_files_pauses_the_garbage_collector_and_restores_it(tmp_path, monkeypatch):
    import gc

    from envre_hf.metrics import fast_io
    from envre_hf.metrics.docre import GoldIndex

    states = []
    real = GoldIndex.from_columns.__func__

    def spy(cls, columns, **options):
        states.append(gc.isenabled())
        return real(cls, columns, **options)

    monkeypatch.setattr(GoldIndex, "from_columns", classmethod(spy))
    sample = Path(fast_io.__file__).parents[1] / "samples"
    assert gc.isenabled()
    fast_io.score_files(sample / "sample_predictions.json", sample / "sample_docs.json")
    assert states == [False] and gc.isenabled()
    gc.disable()
    try:
        with pytest.raises(RuntimeError), fast_io.paused_gc():
            with fast_io.paused_gc():
                raise RuntimeError("inside")
        assert not gc.isenabled()  # a collector paused by the caller stays paused
    finally:
        gc.enable()
    with pytest.raises(RuntimeError), fast_io.paused_gc():
        raise RuntimeError("inside")
    assert gc.isenabled()


def _same_index(a, b):
    for name in ("num_entities", "sentence_masks", "titles", "labels", "num_gold_evidence", "num_gold_intra"):
        assert getattr(a, name) == getattr(b, name), name
    assert list(a.docs) == list(b.docs) and all(a.names(key) == b.names(key) for key in b.docs)


def test_plain_files_are_indexed_from_decoded_fields_the_same(redocred_test_path, redocred_dev_path):
    """The decoded-and-checked columns of a plain file give the index and facts of the dict and typed readers."""
    from envre_hf.metrics.fast_io import _plain_file

    plain = _plain_file(redocred_test_path, redocred_test_path.read_bytes())
    assert plain is not None and len(plain.records) == 500 and all(plain.has_labels)
    records = json.loads(redocred_test_path.read_text())
    _same_index(GoldIndex.from_columns(plain.columns, names_loader=plain.names), GoldIndex.from_records(records))
    _same_index(read_gold_index(redocred_test_path), GoldIndex(read_documents(redocred_test_path)))
    train = read_documents(redocred_dev_path)
    assert read_train_facts(redocred_dev_path) == TrainFacts.from_documents(train) == TrainFacts.from_records(
        json.loads(redocred_dev_path.read_text())
    )


def test_linked_records_are_never_taken_as_plain(redocred_test, tmp_path):
    write_documents(redocred_test[:3], tmp_path / "linked.json", dialect="linked")
    from envre_hf.metrics.fast_io import _plain_file

    assert _plain_file(tmp_path / "linked.json", (tmp_path / "linked.json").read_bytes()) is None
    assert read_gold_index(tmp_path / "linked.json").labels == GoldIndex(redocred_test[:3]).labels


def _mention(d):
    return d["vertexSet"][1][0]


#: One change of a valid record each: the typed reader rejects all but those in ``ACCEPTED``.
EDITS = {
    "sent_id past the sentences": lambda d: _mention(d).update(sent_id=len(d["sents"])),
    "sent_id negative": lambda d: _mention(d).update(sent_id=-1),
    "sent_id a bool": lambda d: _mention(d).update(sent_id=True),
    "sent_id a float": lambda d: _mention(d).update(sent_id=0.0),
    "span end past the sentence": lambda d: _mention(d).update(pos=[0, len(d["sents"][_mention(d)["sent_id"]]) + 1]),
    "empty span": lambda d: _mention(d).update(pos=[2, 2]),
    "negative start": lambda d: _mention(d).update(pos=[-1, 1]),
    "three positions": lambda d: _mention(d).update(pos=[0, 1, 2]),
    "no type": lambda d: _mention(d).update(type=""),
    "name missing": lambda d: _mention(d).pop("name"),
    "entity without mentions": lambda d: d["vertexSet"].append([]),
    "no sentences": lambda d: d.update(sents=[]),
    "a token that is a number": lambda d: d["sents"][0].__setitem__(0, 3),
    "h past the entities": lambda d: d["labels"][0].update(h=len(d["vertexSet"])),
    "t negative": lambda d: d["labels"][0].update(t=-1),
    "unknown relation": lambda d: d["labels"][0].update(r="P0"),
    "the no-relation label Na": lambda d: d["labels"][0].update(r="Na"),
    "repeated label": lambda d: d["labels"].append(dict(d["labels"][0])),
    "evidence past the sentences": lambda d: d["labels"][0].update(evidence=[len(d["sents"])]),
    "evidence negative": lambda d: d["labels"][0].update(evidence=[-1]),
    "labels null": lambda d: d.update(labels=None),
    "doc_id a number": lambda d: d.update(doc_id=7),
    "title null": lambda d: d.update(title=None),
    "labels missing (unlabelled gold)": lambda d: d.pop("labels"),
    # accepted by the typed reader
    "extra mention key": lambda d: _mention(d).update(note="x"),  # Re-DocRED's global_pos and index are known
    "extra label key": lambda d: d["labels"][0].update(score=0.5),
    "evidence missing": lambda d: d["labels"][0].pop("evidence"),
    "doc_id": lambda d: d.update(doc_id="copy-1"),
    "seed (not plain DocRED)": lambda d: d.update(seed=3),
    "70 sentences (masks past 64 bits)": lambda d: (
        d["sents"].extend([["x"]] * (70 - len(d["sents"]))), _mention(d).update(sent_id=69, pos=[0, 1])
    ),
}


@pytest.mark.parametrize("edit", sorted(EDITS))
def test_the_fast_reader_accepts_exactly_what_the_typed_reader_accepts(redocred_test, tmp_path, edit):
    """Every check of the typed reader that scoring from files skips is made on the decoded fields: a record
    the typed reader refuses is never indexed (the same error is raised), an accepted one is indexed the same."""
    from envre_hf.metrics.fast_io import _plain_file

    records = _docred_dicts(redocred_test[:3], tmp_path)
    EDITS[edit](records[1])
    path = tmp_path / "gold.json"
    path.write_text(json.dumps(records), encoding="utf-8")
    fast_fields = _plain_file(path, path.read_bytes())
    try:
        docs = read_documents(path)
    except DocumentError as err:  # never indexed from the decoded columns: the typed reader names the error
        assert fast_fields is None or (edit == "repeated label" and fast_fields.repeats_a_label())
        for read in (read_gold_index, read_train_facts):
            with pytest.raises(DocumentError) as fast:
                read(path)
            assert str(fast.value) == str(err)
        return
    assert edit in ACCEPTED
    assert read_train_facts(path) == TrainFacts.from_documents(docs)
    # those: the typed reader (it checks the fields msgspec would skip)
    assert (fast_fields is None) == (edit in ("seed (not plain DocRED)", "labels null", "extra mention key", "extra label key"))
    if edit == "labels missing (unlabelled gold)":  # a valid document, but no gold: the index refuses it
        with pytest.raises(DocumentError, match="no labels") as err:
            GoldIndex(docs)
        with pytest.raises(DocumentError, match="no labels") as fast:
            read_gold_index(path)
        assert str(fast.value) == str(err.value)
        return
    _same_index(read_gold_index(path), GoldIndex(docs))


ACCEPTED = ("extra mention key", "extra label key", "evidence missing", "doc_id", "seed (not plain DocRED)", "labels null",
            "labels missing (unlabelled gold)", "70 sentences (masks past 64 bits)")  # fmt: skip


def test_negative_sentence_ids_are_named_errors(redocred_test, tmp_path):
    """A sentence id has a bit in the entity's sentence mask only when it is not negative."""
    records = _docred_dicts(redocred_test[:3], tmp_path)
    records[2]["vertexSet"][1][0]["sent_id"] = -1
    with pytest.raises(DocumentError) as err:
        GoldIndex.from_records(records)
    assert (err.value.doc_index, err.value.entity, err.value.mention, err.value.field) == (2, 1, 0, "sent_id")
    doc = redocred_test[0]
    mention = replace(doc.entities[0].mentions[0], sent_id=-2)
    odd = replace(doc, entities=[replace(doc.entities[0], mentions=[mention])] + doc.entities[1:])
    with pytest.raises(DocumentError, match="sent_id -2"):
        GoldIndex([doc, odd])


def test_two_documents_with_one_key_are_refused_by_both_fast_readers(redocred_test, tmp_path):
    records = _docred_dicts(redocred_test[:3], tmp_path)
    records[2]["doc_id"] = records[0]["title"]  # the key of document 0
    path = tmp_path / "gold.json"
    path.write_text(json.dumps(records), encoding="utf-8")
    with pytest.raises(DocumentError) as typed:
        read_documents(path)
    for read in (read_gold_index, read_train_facts):
        with pytest.raises(DocumentError) as fast:
            read(path)
        assert str(fast.value) == str(typed.value) and "doc_id" in str(fast.value)


#: One change of a regular submission each; the decoded-columns path takes only the regular ones.
PREDICTION_EDITS = {
    "regular": lambda p: None,
    "h_idx a bool": lambda p: p[3].update(h_idx=True),
    "h_idx a float": lambda p: p[3].update(h_idx=1.0),
    "h_idx a string": lambda p: p[3].update(h_idx="1"),
    "t_idx negative": lambda p: p[3].update(t_idx=-1),
    "t_idx past the entities": lambda p: p[3].update(t_idx=999),
    "r missing": lambda p: p[3].pop("r"),
    "r a number": lambda p: p[3].update(r=17),
    "evidence a string": lambda p: p[3].update(evidence="1"),
    "evidence of strings": lambda p: p[3].update(evidence=["1"]),
    "unknown document": lambda p: p[3].update(doc_id="no such document"),
    "doc_id a number": lambda p: p[3].update(doc_id=5),
    "no doc_id, a title": lambda p: p[3].update(title=p[3].pop("doc_id")),
    "neither doc_id nor title": lambda p: p[3].pop("doc_id"),
    "an extra field": lambda p: p[3].update(score=0.7),
    "not an object": lambda p: p.__setitem__(3, [1, 2]),
    "empty submission": lambda p: p.clear(),
}


@pytest.mark.parametrize("edit", sorted(PREDICTION_EDITS))
@pytest.mark.parametrize("jsonl", [False, True])
def test_predictions_decoded_into_columns_score_as_the_typed_path(redocred_test, redocred_dev, tmp_path, edit, jsonl):
    """score_files counts regular submissions from msgspec-decoded columns; whatever it does not take goes to
    score_predictions, so every submission gets the typed path's scores or its error, word for word."""
    from envre_hf.metrics import fast_io

    gold = redocred_test[:40]
    write_documents(gold, tmp_path / "gold.json")
    preds = perturbed(gold, 3)
    PREDICTION_EDITS[edit](preds)
    path = tmp_path / ("p.jsonl" if jsonl else "p.json")
    text = "\n".join(map(json.dumps, preds)) + "\n" if jsonl else json.dumps(preds)
    path.write_text(text, encoding="utf-8")
    index = GoldIndex(gold)
    decoded = fast_io._score_decoded(path, path.read_bytes(), index, TrainFacts.from_documents(gold))
    assert (decoded is not None) == (edit in ("regular", "an extra field", "no doc_id, a title"))
    for unknown in (False, True):
        try:
            typed = score_predictions(read_predictions(path), gold, gold, allow_unknown_documents=unknown)
        except PredictionError as err:
            with pytest.raises(PredictionError) as fast:
                score_files(path, tmp_path / "gold.json", tmp_path / "gold.json", allow_unknown_documents=unknown)
            assert str(fast.value) == str(err)
            continue
        fast = score_files(path, tmp_path / "gold.json", tmp_path / "gold.json", allow_unknown_documents=unknown)
        assert fast.to_dict() == typed.to_dict()
        if decoded is not None:
            assert decoded.to_dict() == typed.to_dict()


def test_the_fast_readers_take_paths_as_strings(redocred_test_path, redocred_dev_path):
    assert read_gold_index(str(redocred_test_path)).labels == read_gold_index(redocred_test_path).labels
    assert read_train_facts(str(redocred_dev_path)) == read_train_facts(redocred_dev_path)


def test_an_empty_training_file_has_no_documents(tmp_path):
    (tmp_path / "train.json").write_text("[]", encoding="utf-8")
    for facts in (read_train_facts(tmp_path / "train.json"), TrainFacts.from_records([])):
        assert facts.num_documents == 0 and len(facts) == 0


def test_a_one_sentence_document_takes_the_fast_path(tmp_path):
    from envre_hf.documents import Document, Entity, Mention, Relation
    from envre_hf.metrics.fast_io import _plain_file

    doc = Document(title="One", sents=[["a", "b"]], entities=[Entity([Mention("a", 0, (0, 1), "LOC")]),
                   Entity([Mention("b", 0, (1, 2), "LOC")])], relations=[Relation(0, 1, "P17", [0])])  # fmt: skip
    write_documents([doc], tmp_path / "gold.json")
    plain = _plain_file(tmp_path / "gold.json", (tmp_path / "gold.json").read_bytes())
    assert plain is not None and plain.columns["sentence_masks"] == [[1, 1]]


def test_the_fast_prediction_reader_takes_a_path_as_a_string(tmp_path):
    (tmp_path / "p.json").write_text('[{"doc_id": "a", "h_idx": 0, "t_idx": 1, "r": "P17"}]', encoding="utf-8")
    assert read_predictions_fast(str(tmp_path / "p.json")) == read_predictions_fast(tmp_path / "p.json")


@pytest.mark.parametrize("cache", [False, True])
def test_gold_and_training_folders_are_scored_through_the_typed_reader(redocred_test, tmp_path, cache, monkeypatch, capsys):
    """An envre build folder or a saved dataset is a gold (or training) source like a file: no single file to
    hash, so it is read by the typed reader and not cached."""
    from envre_hf.cli.main import main
    from envre_hf.documents.hf import documents_to_dataset

    gold, train = redocred_test[:30], redocred_test[30:60]
    documents_to_dataset(gold).save_to_disk(str(tmp_path / "gold"))
    documents_to_dataset(train).save_to_disk(str(tmp_path / "train"))
    preds = perturbed(gold, 5)
    (tmp_path / "p.json").write_text(json.dumps(preds), encoding="utf-8")
    monkeypatch.setenv("ENVRE_SCORING_CACHE", str(tmp_path / "cache"))
    expected = score_predictions(preds, gold, train).to_dict()
    assert score_files(tmp_path / "p.json", tmp_path / "gold", tmp_path / "train", cache=cache).to_dict() == expected
    argv = ["evaluate", "--predictions", str(tmp_path / "p.json"), "--gold", str(tmp_path / "gold"), "--train",
            str(tmp_path / "train"), "--output", str(tmp_path / "s.json")] + ([] if cache else ["--no-cache"])  # fmt: skip
    assert main(argv) == 0
    capsys.readouterr()
    assert json.loads((tmp_path / "s.json").read_text()) == json.loads(json.dumps(expected))
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").iterdir())


def test_a_gold_folder_with_a_cached_training_file_stores_no_in_train_entry(redocred_test, tmp_path):
    """Which gold labels are in train is cached per pair of file digests: a folder has none, so nothing is stored
    under a key that another folder would share."""
    from envre_hf.documents.hf import documents_to_dataset

    gold = redocred_test[:20]
    documents_to_dataset(gold).save_to_disk(str(tmp_path / "gold"))
    write_documents(redocred_test[20:40], tmp_path / "train.json")
    preds = perturbed(gold, 6)
    (tmp_path / "p.json").write_text(json.dumps(preds), encoding="utf-8")
    scores = score_files(tmp_path / "p.json", tmp_path / "gold", tmp_path / "train.json", cache=tmp_path / "cache")
    assert scores.to_dict() == score_predictions(preds, gold, redocred_test[20:40]).to_dict()
    stored = sorted(p.name.split("-")[0] for p in (tmp_path / "cache").iterdir())
    assert stored == ["train"]
