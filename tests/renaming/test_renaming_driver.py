"""The one renaming driver (envre_hf.renaming.driver): order, failures, KB errors, and that every caller
(envre build, rename_dataset, training's renamed dev set, on-the-fly twins) goes through it."""

from __future__ import annotations

import dataclasses
import json

import pytest

from envre_hf.documents import Document, DocumentError, documents_to_dataset, dataset_to_documents, read_documents
from envre_hf.kb.base import KnowledgeBaseError
from envre_hf.kb.corpus import CorpusKB
from envre_hf.renaming import RenamingPipeline, rename_dataset
from envre_hf.renaming.driver import RenamingDriver, rename_unit


class TaggingPipeline:
    """Renames by appending the seed to the title; fails on chosen titles (a document or a KB problem)."""

    def __init__(self, bad: dict[str, BaseException] | None = None):
        self.bad = bad or {}
        self.calls: list[tuple[str, int]] = []

    def rename(self, doc: Document, seed: int) -> Document:
        self.calls.append((doc.title, seed))
        if doc.title in self.bad:
            raise self.bad[doc.title]
        return dataclasses.replace(doc, title=f"{doc.title}@{seed}")


@pytest.fixture(scope="module")
def docs(redocred_dev_path) -> list[Document]:
    return read_documents(redocred_dev_path)[:12]


@pytest.mark.parametrize("num_proc", [1, 2])
def test_results_come_in_the_order_of_the_units_whatever_num_proc(docs, num_proc):
    units = [(i, seed) for seed in (3, 1) for i in reversed(range(len(docs)))]
    driver = RenamingDriver(TaggingPipeline(), num_proc=num_proc, chunk_size=5)
    got = [(r.doc_index, r.seed, r.document.title) for r in driver.run(docs, units, progress=False)]
    assert got == [(i, s, f"{docs[i].title}@{s}") for i, s in units]


def test_skip_collects_document_errors_and_pipeline_bugs_and_fail_names_the_document(docs):
    bad = {docs[2].title: DocumentError("entity 1 has no mentions"), docs[5].title: ZeroDivisionError("bug")}
    units = [(i, 0) for i in range(len(docs))]
    results = list(RenamingDriver(TaggingPipeline(bad), on_error="skip").run(docs, units, progress=False))
    failed = {r.doc_index: r.failure for r in results if r.failure is not None}
    assert sorted(failed) == [2, 5]
    assert failed[2].error_type == "DocumentError" and failed[2].seed == 0 and failed[2].title == docs[2].title
    assert failed[2].error.startswith(f"document 2 ({docs[2].title!r})") and "no mentions" in failed[2].error
    assert failed[5].error_type == "ZeroDivisionError" and failed[5].error == "bug"
    assert all(r.document is not None for r in results if r.doc_index not in failed)

    with pytest.raises(DocumentError, match=r"^document 2 .*no mentions"):
        list(RenamingDriver(TaggingPipeline(bad)).run(docs, units, progress=False))
    with pytest.raises(ZeroDivisionError):
        list(RenamingDriver(TaggingPipeline({docs[5].title: ZeroDivisionError("bug")})).run(docs, units, progress=False))


def test_a_knowledge_base_failure_stops_even_with_skip(docs):
    pipeline = TaggingPipeline({docs[1].title: KnowledgeBaseError("HTTP 503")})
    with pytest.raises(KnowledgeBaseError):
        list(RenamingDriver(pipeline, on_error="skip").run(docs, [(i, 0) for i in range(4)], progress=False))
    assert pipeline.calls == [(docs[0].title, 0), (docs[1].title, 0)]  # stopped there


def test_leaks_and_rows_only_when_asked(docs, redocred_dev):
    pipeline = RenamingPipeline(CorpusKB(redocred_dev))
    plain = next(RenamingDriver(pipeline).run(docs, [(0, 0)], progress=False))
    assert plain.row is None and plain.leaks == 0
    full = next(RenamingDriver(pipeline, count_leaks=True, with_rows=True).run(docs, [(0, 0)], progress=False))
    _, report = pipeline.rename_with_report(docs[0], 0)
    assert full.document == plain.document == pipeline.rename(docs[0], 0)
    assert full.leaks == report.leaks_found - report.leaks_fixed
    assert full.row["title"] == full.document.title and full.row["seed"] == 0


def test_rename_documents_is_seed_major_and_refuses_skip(docs):
    got = RenamingDriver(TaggingPipeline()).rename_documents(docs[:3], [0, 1], progress=False)
    assert [d.title for d in got] == [f"{d.title}@{s}" for s in (0, 1) for d in docs[:3]]
    with pytest.raises(ValueError, match="on_error='fail'"):
        RenamingDriver(TaggingPipeline(), on_error="skip").rename_documents(docs, [0])
    with pytest.raises(ValueError, match="on_error"):
        RenamingDriver(TaggingPipeline(), on_error="ignore")


def test_every_caller_reports_a_bad_document_the_same_way(docs, tmp_path):
    """One driver: build (skip: errors file; fail: raised), rename_dataset, training's renaming and twins all
    name the document that could not be renamed."""
    from envre_hf.documents import write_documents
    from envre_hf.renaming.builder import BuildConfig, build_split
    from envre_hf.training.pairing import OnTheFlyTwins, fixed_twins

    bad = {docs[1].title: DocumentError("entity 0 is broken")}
    expected = f"document 1 ({docs[1].title!r}): entity 0 is broken"
    with pytest.raises(DocumentError) as training:
        fixed_twins(docs[:3], TaggingPipeline(bad), seed=0, progress=False)
    assert str(training.value) == expected
    with pytest.raises(DocumentError) as dataset:
        rename_dataset(documents_to_dataset(docs[:3]), TaggingPipeline(bad), seeds=[0])
    assert expected in str(dataset.value)
    with pytest.raises(DocumentError, match=f"^document {docs[1].title!r}: entity 0 is broken$"):
        OnTheFlyTwins(TaggingPipeline(bad)).twin(docs[1], epoch=0)

    write_documents(docs[:3], tmp_path / "in.json")
    result = build_split(TaggingPipeline(bad), tmp_path / "in.json",
                         BuildConfig(tmp_path / "out", seeds=(0,), on_error="skip", progress=False))
    lines = (tmp_path / "out" / "errors" / "test.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["error"] for line in lines] == [expected] == [f.error for f in result.failures]


def test_rename_dataset_rows_equal_the_driver_copies(docs, redocred_dev):
    pipeline = RenamingPipeline(CorpusKB(redocred_dev))
    got = dataset_to_documents(rename_dataset(documents_to_dataset(docs[:4]), pipeline, seeds=[2, 0]))
    assert got == RenamingDriver(pipeline).rename_documents(docs[:4], [2, 0], progress=False)


def test_rename_unit_of_a_single_document_matches_the_pipeline(docs, redocred_dev):
    pipeline = RenamingPipeline(CorpusKB(redocred_dev))
    assert rename_unit(pipeline, docs[3], 4).document == pipeline.rename(docs[3], 4)
