"""Document model: lossless round trips on real data, validation errors, quirk counts."""

from __future__ import annotations

import copy
import json

import pytest

from envre_hf.documents import (
    DOCRED_RELATIONS,
    DocumentError,
    count_quirks,
    dataset_to_documents,
    documents_to_dataset,
    from_dict,
    read_documents,
    to_docred,
    to_linked,
    validate_document,
    validate_documents,
    write_documents,
)


@pytest.fixture(scope="module", params=["dev", "test"])
def real_split(request, redocred_dev_path, redocred_test_path):
    path = redocred_dev_path if request.param == "dev" else redocred_test_path
    raw = json.loads(path.read_text(encoding="utf-8"))
    return raw, read_documents(path)


def test_json_round_trip_is_lossless_on_real_files(real_split, tmp_path):
    raw, docs = real_split
    assert [to_docred(d) for d in docs] == raw
    # key order too: the rewritten file equals the original JSON text structure
    assert [list(to_docred(d)) for d in docs[:20]] == [list(r) for r in raw[:20]]
    out = write_documents(docs, tmp_path / "copy.json")
    assert json.loads(out.read_text(encoding="utf-8")) == raw


def test_jsonl_round_trip(real_split, tmp_path):
    raw, docs = real_split
    path = write_documents(docs, tmp_path / "docs.jsonl")
    assert len(path.read_text(encoding="utf-8").splitlines()) == len(raw)
    assert [to_docred(d) for d in read_documents(path)] == raw


def test_datasets_round_trip_is_lossless_on_real_files(real_split, tmp_path):
    raw, docs = real_split
    ds = documents_to_dataset(docs)
    assert ds.num_rows == len(raw)
    ds.to_parquet(str(tmp_path / "docs.parquet"))
    from datasets import Dataset

    back = dataset_to_documents(Dataset.from_parquet(str(tmp_path / "docs.parquet")))
    assert [to_docred(d) for d in back] == raw


def test_linked_round_trip_and_conversion(redocred_test):
    doc = copy.deepcopy(redocred_test[0])
    doc.entities[0].wikidata_id = "Q42"
    linked = to_linked(doc)
    assert "entities" in linked and "vertexSet" not in linked
    assert linked["entities"][0]["entity_linking"] == {"wikidata_resource": "Q42"}
    back = from_dict(linked)
    assert back.entities[0].wikidata_id == "Q42"
    assert to_linked(back) == linked
    assert [(r.h, r.t, r.r) for r in back.relations] == [(r.h, r.t, r.r) for r in doc.relations]
    # DocRED dialect keeps the link in entity_wikidata_ids
    again = from_dict(to_docred(back))
    assert [e.wikidata_id for e in again.entities] == [e.wikidata_id for e in doc.entities]


def test_linked_file_with_entity_ids_and_extra_fields(tmp_path):
    linked_doc = {
        "title": "Skai",
        "sents": [["Skai", "TV", "is", "in", "Piraeus", "."]],
        "entities": [
            {
                "id": 7,
                "type": "ORG",
                "entity_linking": {"wikipedia_resource": "Skai_TV", "wikidata_resource": "Q2334737", "method": "manual"},
                "mentions": [{"name": "Skai TV", "sent_id": 0, "pos": [0, 2]}],
            },
            {
                "id": 3,
                "type": "LOC",
                "entity_linking": {"wikidata_resource": "#ignored#", "method": "num/time"},
                "mentions": [{"name": "Piraeus", "sent_id": 0, "pos": [4, 5]}],
            },
        ],
        "relations": [{"r": "P159", "h": 7, "t": 3, "evidence": [0]}],
        "old-entities": [["kept"]],
    }
    path = tmp_path / "linked.json"
    path.write_text(json.dumps([linked_doc]))
    (doc,) = read_documents(path)
    assert [e.wikidata_id for e in doc.entities] == ["Q2334737", None]
    assert (doc.relations[0].h, doc.relations[0].t) == (0, 1)
    assert doc.extra == {"old-entities": [["kept"]]}
    write_documents([doc], tmp_path / "back.json", dialect="linked")
    assert json.loads((tmp_path / "back.json").read_text()) == [linked_doc]


def test_unknown_fields_are_kept(tmp_path):
    raw = {
        "title": "T",
        "vertexSet": [[{"name": "A", "pos": [0, 1], "sent_id": 0, "type": "PER", "note": 1}]],
        "labels": [],
        "sents": [["A", "."]],
        "source": "handmade",
    }
    assert to_docred(from_dict(raw)) == raw
    back = dataset_to_documents(documents_to_dataset([from_dict(raw)]))
    assert to_docred(back[0]) == raw


def test_unlabelled_documents_stay_unlabelled():
    raw = {"title": "T", "vertexSet": [[{"name": "A", "pos": [0, 1], "sent_id": 0, "type": "PER"}]], "sents": [["A"]]}
    doc = from_dict(raw)
    assert not doc.has_labels
    assert to_docred(doc) == raw


def test_doc_id_defaults_to_title():
    raw = {"title": "T", "vertexSet": [], "labels": [], "sents": [["x"]]}
    assert from_dict(raw).key == "T"
    assert from_dict({**raw, "doc_id": "T#3"}).key == "T#3"


def _good():
    return {
        "title": "Tiny",
        "vertexSet": [
            [{"name": "Ada", "pos": [0, 1], "sent_id": 0, "type": "PER"}],
            [{"name": "London", "pos": [3, 4], "sent_id": 0, "type": "LOC"}],
        ],
        "labels": [{"r": "P19", "h": 0, "t": 1, "evidence": [0]}],
        "sents": [["Ada", "born", "in", "London", "."]],
    }


@pytest.mark.parametrize(
    "mutate, field, where",
    [
        (lambda d: d["vertexSet"][1][0].update(sent_id=3), "sent_id", "entity 1 mention 0"),
        (lambda d: d["vertexSet"][1][0].update(pos=[3, 9]), "pos", "entity 1 mention 0"),
        (lambda d: d["vertexSet"][1][0].update(pos=[-1, 2]), "pos", "entity 1 mention 0"),
        (lambda d: d["vertexSet"][0][0].update(pos=[1, 1]), "pos", "entity 0 mention 0"),
        (lambda d: d["vertexSet"].append([]), "vertexSet", "entity 2"),
        (lambda d: d["labels"][0].update(h=5), "h", "label 0"),
        (lambda d: d["labels"][0].update(t=-1), "t", "label 0"),
        (lambda d: d["labels"][0].update(r="P99999"), "r", "label 0"),
        (lambda d: d["labels"].append(dict(d["labels"][0])), "r", "label 1"),
        (lambda d: d["labels"][0].update(evidence=[4]), "evidence", "label 0"),
    ],
)
def test_validation_errors_name_document_entity_and_field(mutate, field, where):
    raw = _good()
    validate_document(from_dict(raw), 0)
    mutate(raw)
    with pytest.raises(DocumentError) as info:
        validate_documents([from_dict(_good()), from_dict(raw)])
    err = info.value
    assert err.field == field and err.doc_index == 1 and err.title == "Tiny"
    assert "document 1" in str(err) and "'Tiny'" in str(err) and where in str(err) and repr(field) in str(err)


@pytest.mark.parametrize(
    "mutate, field",
    [
        (lambda d: d.pop("sents"), "sents"),
        (lambda d: d["vertexSet"][0][0].pop("name"), "name"),
        (lambda d: d["vertexSet"][0][0].update(pos=[0]), "pos"),
        (lambda d: d["vertexSet"][0][0].update(sent_id="0"), "sent_id"),
        (lambda d: d["labels"][0].update(h=None), "h"),
    ],
)
def test_malformed_json_is_a_document_error(mutate, field, tmp_path):
    raw = _good()
    mutate(raw)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps([_good(), raw]))
    with pytest.raises(DocumentError) as info:
        read_documents(path)
    assert info.value.field == field and info.value.doc_index == 1


def test_real_files_validate_and_quirks_are_counted(redocred_test, redocred_dev):
    validate_documents(redocred_test)
    validate_documents(redocred_dev)
    counts = count_quirks(redocred_test)
    assert (counts.mentions, counts.name_mismatches, counts.overlapping_mention_pairs) == (13018, 317, 37)


def test_relation_table_matches_docred(rel_info_path):
    official = json.loads(rel_info_path.read_text())
    assert {r.id: r.name for r in DOCRED_RELATIONS} == official
    assert len(DOCRED_RELATIONS) == 96
