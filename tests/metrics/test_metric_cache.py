"""The scoring cache (envre_hf.metrics.cache): warm results equal cold ones, entries are keyed by file
content, and a damaged or foreign entry is ignored and rebuilt, never trusted."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import orjson
import pytest

from envre_hf.documents import Document, Entity, Mention, Relation, write_documents
from envre_hf.metrics import GoldIndex, TrainFacts, read_gold_index, read_train_facts, score_files
from envre_hf.metrics import cache as cache_module
from envre_hf.metrics import fast_io
from envre_hf.metrics.cache import FORMAT, ScoringCache, digest, file_digest
from envre_hf.metrics.docre import score_predictions

from _metric_helpers import perturbed

INDEX_FIELDS = ("num_entities", "sentence_masks", "titles", "labels", "num_gold_evidence", "num_gold_intra",
                "gold_by_relation", "gold_by_count", "docs_by_count")  # fmt: skip


@pytest.fixture(scope="module")
def files(redocred_test, redocred_test_path, redocred_dev_path, tmp_path_factory):
    """The real test split as gold, the dev split as training documents, perturbed predictions."""
    folder = tmp_path_factory.mktemp("scoring")
    preds = folder / "preds.json"
    preds.write_text(json.dumps(perturbed(redocred_test, 7)), encoding="utf-8")
    return preds, redocred_test_path, redocred_dev_path


def entries(folder):
    return sorted(p.name.split("-")[0] for p in folder.iterdir())


def test_warm_scores_equal_cold_scores_on_the_test_split(files, tmp_path, monkeypatch):
    preds, gold, train = files
    cold = score_files(preds, gold, train)
    first = score_files(preds, gold, train, cache=tmp_path)
    assert entries(tmp_path) == ["gold", "in", "names", "train"]
    built = []
    monkeypatch.setattr(GoldIndex, "from_records", classmethod(lambda cls, records, **options: built.append(1)))
    monkeypatch.setattr(TrainFacts, "from_records", classmethod(lambda cls, records, **options: built.append(1)))
    warm = score_files(preds, gold, train, cache=tmp_path)
    assert built == []  # nothing was read from the gold or training file
    assert cold.num_correct_in_train > 0 and cold.evidence_f1 is not None
    assert warm.to_dict() == first.to_dict() == cold.to_dict()  # to the last digit


def test_cached_index_and_facts_equal_the_built_ones(files, tmp_path):
    _, gold, train = files
    built, facts = read_gold_index(gold), read_train_facts(train)
    read_gold_index(gold, cache=tmp_path), read_train_facts(train, cache=tmp_path)
    cached, cached_facts = read_gold_index(gold, cache=tmp_path), read_train_facts(train, cache=tmp_path)
    for name in INDEX_FIELDS:
        assert getattr(cached, name) == getattr(built, name), name
    assert all(cached.names(key) == built.names(key) for key in built.docs)
    assert cached_facts == facts and cached_facts.by_relation == facts.by_relation
    assert cached_facts.num_documents == facts.num_documents
    assert cached.labels_in_train(cached_facts) == built.labels_in_train(facts)


def test_a_changed_gold_file_gets_a_new_entry(redocred_test, files, tmp_path):
    preds, _, train = files
    docs = redocred_test[:100]
    gold = tmp_path / "gold.json"
    write_documents(docs, gold)
    store = tmp_path / "cache"
    before = score_files(preds, gold, train, cache=store, allow_unknown_documents=True)
    first_key = file_digest(gold)
    changed = [replace(docs[0], relations=docs[0].relations[1:])] + docs[1:]
    write_documents(changed, gold)
    assert file_digest(gold) != first_key
    after = score_files(preds, gold, train, cache=store, allow_unknown_documents=True)
    assert after.to_dict() == score_files(preds, gold, train, allow_unknown_documents=True).to_dict()
    assert after.num_gold == before.num_gold - 1
    assert entries(store).count("gold") == 2


def _entry_path(store: ScoringCache, kind: str):
    (path,) = [p for p in store.folder.iterdir() if p.name.startswith(kind + "-")]
    return path


def _rewrite(path, payload: bytes, **header_changes):
    header = orjson.loads(path.read_bytes().partition(b"\n")[0])
    header.update(payload=digest(payload), **header_changes)
    path.write_bytes(orjson.dumps(header) + b"\n" + payload)


def _damages():
    def truncate(path):
        path.write_bytes(path.read_bytes()[:-100])

    def flip_payload_byte(path):
        data = bytearray(path.read_bytes())
        data[-50] ^= 1
        path.write_bytes(bytes(data))

    def other_format(path):
        _rewrite(path, path.read_bytes().partition(b"\n")[2], format=FORMAT + "-other")

    def not_json(path):
        path.write_bytes(b"\x00\xff garbage")

    def label_out_of_range(path):  # a well-formed entry (right digests) whose columns do not fit
        columns = orjson.loads(path.read_bytes().partition(b"\n")[2])
        columns["label_h"][0] = 10_000
        _rewrite(path, orjson.dumps(columns))

    def label_of_a_missing_document(path):
        columns = orjson.loads(path.read_bytes().partition(b"\n")[2])
        columns["label_doc"][-1] = len(columns["keys"])
        _rewrite(path, orjson.dumps(columns))

    def columns_of_another_kind(path):
        _rewrite(path, orjson.dumps({"num_documents": 1, "by_relation": {}}))

    def wrong_types(path):
        columns = orjson.loads(path.read_bytes().partition(b"\n")[2])
        columns["titles"][0] = [7]
        _rewrite(path, orjson.dumps(columns))

    def a_title_as_a_number(path):  # hashable, so only the type check refuses it
        columns = orjson.loads(path.read_bytes().partition(b"\n")[2])
        columns["titles"][0] = 7
        _rewrite(path, orjson.dumps(columns))

    def a_title_missing(path):
        columns = orjson.loads(path.read_bytes().partition(b"\n")[2])
        columns["titles"].pop()
        _rewrite(path, orjson.dumps(columns))

    def a_label_document_missing(path):
        columns = orjson.loads(path.read_bytes().partition(b"\n")[2])
        columns["label_doc"].pop()
        _rewrite(path, orjson.dumps(columns))

    def a_count_as_text(path):
        columns = orjson.loads(path.read_bytes().partition(b"\n")[2])
        columns["num_gold_evidence"] = str(columns["num_gold_evidence"])
        _rewrite(path, orjson.dumps(columns))

    return [truncate, flip_payload_byte, other_format, not_json, label_out_of_range, label_of_a_missing_document,
            columns_of_another_kind, wrong_types, a_title_as_a_number, a_title_missing, a_label_document_missing,
            a_count_as_text]  # fmt: skip


@pytest.mark.parametrize("damage", _damages(), ids=lambda f: f.__name__)
def test_a_damaged_or_foreign_gold_entry_is_ignored_and_rebuilt(redocred_test, tmp_path, damage):
    docs = redocred_test[:60]
    gold = tmp_path / "gold.json"
    write_documents(docs, gold)
    store = ScoringCache(tmp_path / "cache")
    expected = GoldIndex(docs)
    read_gold_index(gold, cache=store)
    path = _entry_path(store, "gold")
    good = path.read_bytes()
    damage(path)
    assert path.read_bytes() != good
    index = read_gold_index(gold, cache=store)
    for name in INDEX_FIELDS:
        assert getattr(index, name) == getattr(expected, name), name
    assert path.read_bytes() == good  # rewritten from the file


def test_damaged_train_and_in_train_entries_are_rebuilt(files, redocred_test, tmp_path):
    preds, _, train = files
    gold = tmp_path / "gold.json"
    write_documents(redocred_test[:150], gold)
    store = ScoringCache(tmp_path / "cache")
    expected = score_files(preds, gold, train, allow_unknown_documents=True).to_dict()
    assert score_files(preds, gold, train, cache=store, allow_unknown_documents=True).to_dict() == expected
    for kind, payload in (("train", b'{"num_documents": 1, "by_relation": {"P17": [["a"], []]}}'),
                          ("in", b'{"num_labels": 3, "positions": [0]}')):  # fmt: skip
        _rewrite(_entry_path(store, kind), payload)
    assert score_files(preds, gold, train, cache=store, allow_unknown_documents=True).to_dict() == expected


def test_in_train_entries_past_the_labels_are_rebuilt_and_empty_ones_are_used(redocred_test, tmp_path, monkeypatch):
    gold, train = tmp_path / "gold.json", tmp_path / "train.json"
    write_documents(redocred_test[:40], gold)
    write_documents(redocred_test[40:80], train)
    preds = tmp_path / "p.json"
    preds.write_text(json.dumps(perturbed(redocred_test[:40])), encoding="utf-8")
    store = ScoringCache(tmp_path / "cache")
    expected = score_files(preds, gold, train).to_dict()
    assert score_files(preds, gold, train, cache=store).to_dict() == expected
    num_labels = sum(len(d.relations) for d in redocred_test[:40])
    _rewrite(_entry_path(store, "in"), orjson.dumps({"num_labels": num_labels, "positions": [num_labels]}))  # one past the end
    assert score_files(preds, gold, train, cache=store).to_dict() == expected
    # no gold label in train: the stored positions are [], read back as such (not computed again)
    _rewrite(_entry_path(store, "in"), orjson.dumps({"num_labels": num_labels, "positions": []}))
    from envre_hf.metrics import docre

    monkeypatch.setattr(docre, "_labels_in_train", lambda *args: pytest.fail("computed again"))
    none_in_train = score_files(preds, gold, train, cache=store)
    assert none_in_train.num_correct_in_train == 0


@pytest.mark.parametrize("names", [b'[["x"]]', b'"not a list"', None], ids=["foreign", "not-a-list", "missing"])
def test_mention_names_are_read_from_their_entry_or_else_from_the_file(files, redocred_test, tmp_path, names):
    """A warm gold index reads mention names only when Ign needs them (new training file)."""
    preds, _, train = files
    gold = tmp_path / "gold.json"
    write_documents(redocred_test[:150], gold)
    store = ScoringCache(tmp_path / "cache")
    expected = score_files(preds, gold, train, allow_unknown_documents=True).to_dict()
    score_files(preds, gold, cache=store, allow_unknown_documents=True)  # gold and names entries, no Ign
    path = _entry_path(store, "names")
    if names is None:
        path.unlink()
    else:
        _rewrite(path, names)
    assert score_files(preds, gold, train, cache=store, allow_unknown_documents=True).to_dict() == expected
    index = read_gold_index(gold, cache=store)
    assert all(index.names(d.key) == [e.names for e in d.entities] for d in redocred_test[:150])


def test_an_unwritable_cache_is_skipped(files, redocred_test, tmp_path):
    preds, _, train = files
    gold = tmp_path / "gold.json"
    write_documents(redocred_test[:40], gold)
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder should be")
    scores = score_files(preds, gold, train, cache=blocker, allow_unknown_documents=True)
    assert scores.to_dict() == score_files(preds, gold, train, allow_unknown_documents=True).to_dict()
    assert ScoringCache(blocker).store("gold", "x", {}) is False


def test_long_documents_keep_their_sentence_masks(tmp_path):
    """Masks of documents with 64 sentences and more exceed JSON's 64-bit numbers: stored as strings."""

    def mention(name, sent):
        return Mention(name=name, sent_id=sent, pos=(0, 1), type="LOC")

    long_doc = Document(
        title="Long",
        sents=[["w"]] * 70,
        entities=[Entity([mention("A", 0), mention("A2", 69)]), Entity([mention("B", 69)]), Entity([mention("C", 3)])],
        relations=[Relation(0, 1, "P17", [69]), Relation(2, 1, "P131", [3])],
    )
    gold = tmp_path / "gold.json"
    write_documents([long_doc], gold)
    built = read_gold_index(gold, cache=tmp_path / "cache")
    cached = read_gold_index(gold, cache=tmp_path / "cache")
    assert cached.sentence_masks == built.sentence_masks == {"Long": [1 | 1 << 69, 1 << 69, 1 << 3]}
    assert cached.num_gold_intra == 1
    preds = [{"title": "Long", "h_idx": 0, "t_idx": 1, "r": "P17"}, {"title": "Long", "h_idx": 2, "t_idx": 1, "r": "P131"}]
    assert score_predictions(preds, cached).to_dict() == score_predictions(preds, [long_doc]).to_dict()


def test_the_cli_caches_by_default_and_not_with_no_cache(tmp_path, monkeypatch, capsys):
    from envre_hf.cli.main import main

    samples = Path(fast_io.__file__).parents[1] / "samples"
    argv = ["evaluate", "--predictions", str(samples / "sample_predictions.json"), "--gold", str(samples / "sample_docs.json"),
            "--train", str(samples / "sample_train.json"), "--output"]  # fmt: skip
    monkeypatch.setenv("ENVRE_SCORING_CACHE", str(tmp_path / "none"))
    assert main(argv + [str(tmp_path / "uncached.json"), "--no-cache"]) == 0
    assert not (tmp_path / "none").exists()
    monkeypatch.setenv("ENVRE_SCORING_CACHE", str(tmp_path / "cache"))
    assert main(argv + [str(tmp_path / "cold.json")]) == 0
    assert entries(tmp_path / "cache") == ["gold", "in", "names", "train"]
    assert main(argv + [str(tmp_path / "warm.json")]) == 0
    capsys.readouterr()
    texts = {(tmp_path / f"{name}.json").read_text() for name in ("uncached", "cold", "warm")}
    assert len(texts) == 1 and json.loads(texts.pop())["num_correct_in_train"] > 0


def test_default_cache_folder(monkeypatch, tmp_path):
    monkeypatch.delenv("ENVRE_SCORING_CACHE", raising=False)
    monkeypatch.setenv("ENVRE_CACHE", str(tmp_path))
    assert cache_module.default_cache_dir() == tmp_path / "scoring"
    monkeypatch.setenv("ENVRE_SCORING_CACHE", str(tmp_path / "elsewhere"))
    assert cache_module.default_cache_dir() == tmp_path / "elsewhere"
    assert cache_module.resolve_cache(None) is None and cache_module.resolve_cache(False) is None
    assert cache_module.resolve_cache(True).folder == tmp_path / "elsewhere"
    assert cache_module.resolve_cache(tmp_path).folder == tmp_path


def test_file_digest_is_the_digest_of_the_bytes(tmp_path):
    path = tmp_path / "f.bin"
    data = bytes(range(256)) * 5000  # more than one read buffer
    path.write_bytes(data)
    assert file_digest(path) == digest(data) and digest(data) != digest(data[:-1])


def test_a_gold_file_changed_during_a_job_is_named_not_mixed(redocred_test, tmp_path):
    """Index entries are keyed by the very bytes that were parsed; a gold file rewritten after its cached
    index was read, before its mention names were needed, is an error naming the file, not a mix."""
    gold = tmp_path / "gold.json"
    write_documents(redocred_test[:20], gold)
    store = tmp_path / "cache"
    read_gold_index(gold, cache=store)
    (names_entry,) = store.glob("names-*")
    assert names_entry.name == f"names-{digest(gold.read_bytes())}.json"
    names_entry.unlink()  # the names must now come from the file
    index = read_gold_index(gold, cache=store)  # from the cache
    write_documents(redocred_test[20:40], gold)  # rewritten meanwhile
    key = next(iter(index.docs))
    with pytest.raises(fast_io.DocumentError, match="changed while it was being scored"):
        index.names(key)


def test_training_columns_of_other_types_are_refused():
    for columns in ({"num_documents": "5", "by_relation": {}}, {"num_documents": 5, "by_relation": []}):
        with pytest.raises(ValueError, match="unexpected column types"):
            TrainFacts.from_columns(columns)


def test_a_long_single_entity_document_is_read_from_the_cache_without_a_rebuild(tmp_path, monkeypatch):
    """The masks of a document past 64 sentences are strings in the cache, also when it has one entity."""
    doc = Document(title="Alone", sents=[["w"]] * 70, entities=[Entity([Mention("A", 69, (0, 1), "LOC")])], relations=[])
    other = Document(title="Pair", sents=[["a", "b"]], entities=[Entity([Mention("a", 0, (0, 1), "LOC")]),
                     Entity([Mention("b", 0, (1, 2), "LOC")])], relations=[Relation(0, 1, "P17", [0])])  # fmt: skip
    gold = tmp_path / "gold.json"
    write_documents([doc, other], gold)
    built = read_gold_index(gold, cache=tmp_path / "cache")
    builds = []
    real = fast_io._build
    monkeypatch.setattr(fast_io, "_build", lambda *args: builds.append(args) or real(*args))
    cached = read_gold_index(gold, cache=tmp_path / "cache")
    assert builds == [] and cached.sentence_masks == built.sentence_masks == {"Alone": [1 << 69], "Pair": [1, 1]}


def test_training_columns_that_are_not_lists_are_refused():
    """A relation's value must be its [heads, tails] lists: a two-character string is not read as one fact."""
    with pytest.raises(ValueError, match="two name columns"):
        TrainFacts.from_columns({"num_documents": 1, "by_relation": {"P17": "ab"}})


def test_columns_with_their_names_read_back_to_the_same_index(redocred_test):
    built = GoldIndex(redocred_test[:30])
    index = GoldIndex.from_columns(built.to_columns())  # the names column present: no loader needed
    for name in INDEX_FIELDS:
        assert getattr(index, name) == getattr(built, name), name
    assert list(index.docs) == list(built.docs) and all(index.names(key) == built.names(key) for key in built.docs)
