"""Twin sources, pair alignment and name isolation on real Re-DocRED documents."""

from __future__ import annotations

import copy
import functools
import json

import pytest

from envre_hf.documents import DocumentError, read_documents, write_documents
from envre_hf.features import DocRECollator, featurize_document
from envre_hf.kb.corpus import CorpusKB
from envre_hf.documents.tokenize import name_key
from envre_hf.renaming import RenamingConfig, RenamingPipeline, used_names
from envre_hf.renaming.isolation import load_excluded_names
from envre_hf.training import (
    EVRTPairCollator,
    EVRTPairDataset,
    OnTheFlyTwins,
    PrebuiltTwins,
    check_document_alignment,
    check_name_isolation,
    original_key,
)

N_DOCS = 12


@pytest.fixture(scope="module")
def pool(redocred_dev):
    return redocred_dev


@pytest.fixture(scope="module")
def train_docs(redocred_dev):
    return redocred_dev[:N_DOCS]


def _kb_names(docs) -> set[str]:
    """Name keys of KB substitutions (rule-made values and unchanged entities left out)."""
    return {
        name_key(s.new_name)
        for d in docs
        for s in d.substitutions or []
        if s.match != "rule" and not s.match.startswith("unchanged:")
    }


def test_on_the_fly_twins_are_aligned_fresh_per_epoch_and_deterministic(train_docs, pool, tokenizer):
    featurize = functools.partial(featurize_document, tokenizer=tokenizer, max_seq_length=512)
    dataset = EVRTPairDataset(train_docs, featurize, OnTheFlyTwins(RenamingPipeline(CorpusKB(pool)), base_seed=10))
    item = dataset[0]
    assert item["twin"]["doc_key"] == f"{train_docs[0].key}#10"
    assert item["twin"]["hts"] == item["original"]["hts"] and item["twin"]["labels"] == item["original"]["labels"]
    assert item["twin"]["input_ids"] != item["original"]["input_ids"]  # names really changed
    assert dataset[0]["twin"] == item["twin"]  # same epoch: same twin
    dataset.set_epoch(1.0)
    assert dataset[0]["twin"]["doc_key"] == f"{train_docs[0].key}#11"
    dataset.set_epoch(0.999999999)  # a float epoch from TrainerState rounds to the epoch it belongs to
    assert dataset.epoch == 1
    dataset.set_epoch(2.5)  # resumed mid-epoch
    assert dataset.epoch == 2 and dataset.twin_document(3).key == f"{train_docs[3].key}#12"

    batch = EVRTPairCollator(DocRECollator(tokenizer))([dataset[i] for i in range(3)])
    original, twin = batch, batch["twin"]
    assert original["doc_keys"] == [d.key for d in train_docs[:3]]
    assert twin["doc_keys"] == [f"{d.key}#12" for d in train_docs[:3]]
    assert original["hts"] == twin["hts"]
    assert (original["labels"] == twin["labels"]).all()


def test_prebuilt_twins_match_by_doc_id_and_draw_one_seed_per_epoch(train_docs, pool, tmp_path):
    pipeline = RenamingPipeline(CorpusKB(pool))
    renamed = [pipeline.rename(d, seed=s) for s in (3, 4, 5) for d in train_docs]
    path = write_documents(renamed, tmp_path / "train_renamed.jsonl")
    twins = PrebuiltTwins(train_docs, read_documents(path))
    drawn = {twins.twin(train_docs[0], epoch).seed for epoch in range(12)}
    assert drawn <= {3, 4, 5} and len(drawn) > 1
    assert [twins.twin(d, 2).key for d in train_docs] == [twins.twin(d, 2).key for d in train_docs]
    assert all(original_key(twins.twin(d, 0)) == d.key for d in train_docs)
    # orig_title is the fallback key when a twin has no '<key>#<seed>' doc_id
    bare = copy.deepcopy(renamed[0])
    bare.doc_id = None
    assert original_key(bare) == train_docs[0].title
    with pytest.raises(DocumentError, match="no renamed twin"):
        PrebuiltTwins(train_docs, renamed[1:N_DOCS])


def test_a_twin_that_breaks_entity_order_is_rejected(train_docs, pool):
    twin = RenamingPipeline(CorpusKB(pool)).rename(train_docs[0], seed=0)
    twin.entities = twin.entities[1:] + twin.entities[:1]
    with pytest.raises(DocumentError):
        check_document_alignment(train_docs[0], twin)
    with pytest.raises(DocumentError):
        PrebuiltTwins(train_docs[:1], [twin])


def test_training_renames_never_use_benchmark_names(train_docs, pool, tmp_path):
    kb = CorpusKB(pool)
    benchmark = [RenamingPipeline(kb).rename(d, seed=7) for d in train_docs]
    bench_path = write_documents(benchmark, tmp_path / "env_dev.json")
    names_path = tmp_path / "names.txt"
    names_path.write_text("Some Name\n\nOther Name\n", encoding="utf-8")
    build_names = tmp_path / "build" / "names_used.json"  # what envre build writes next to its parquet
    build_names.parent.mkdir()
    build_names.write_text(json.dumps({"format": "envre-names-used/1", "splits": {"test": ["Built Name"]}}))
    excluded = load_excluded_names([bench_path, names_path, build_names.parent])
    assert excluded == used_names(benchmark) | {"Some Name", "Other Name", "Built Name"}
    bench_keys = _kb_names(benchmark)

    free = [RenamingPipeline(kb).rename(d, seed=s) for s in (0, 1) for d in train_docs]
    assert _kb_names(free) & bench_keys, "without isolation the pool's names do collide (the test can fail)"
    with pytest.raises(ValueError, match="name isolation"):
        check_name_isolation(free, excluded)

    isolated_pipeline = RenamingPipeline(kb, RenamingConfig(exclude_names=excluded))
    source = OnTheFlyTwins(isolated_pipeline, base_seed=0)
    isolated = [source.twin(d, epoch) for epoch in (0, 1) for d in train_docs]
    assert not _kb_names(isolated) & bench_keys
    check_name_isolation(isolated, excluded)
