"""The dataset_scripts builders run directly (datasets 5 has no script loading) on local files only; an
``envre build`` folder needs no builder."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from envre_hf.documents import dataset_to_documents, read_documents

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from dataset_scripts.docred.docred import DocRED  # noqa: E402
from dataset_scripts.redocred.redocred import ReDocRED  # noqa: E402

N = 12


@pytest.fixture(scope="module")
def source_dir(tmp_path_factory, redocred_dev_path, redocred_test_path) -> Path:
    """A Re-DocRED-like folder (original file names) holding the first N documents of dev and test."""
    folder = tmp_path_factory.mktemp("redocred")
    for src, name in ((redocred_dev_path, "dev_revised.json"), (redocred_test_path, "test_revised.json")):
        (folder / name).write_text(json.dumps(json.loads(src.read_text())[:N]), encoding="utf-8")
    return folder


def _prepare(builder_cls, tmp_path, **kwargs):
    builder = builder_cls(cache_dir=str(tmp_path / "cache"), **kwargs)
    builder.download_and_prepare()
    return builder.as_dataset()


def test_redocred_from_data_dir_round_trips(source_dir, tmp_path):
    ds = _prepare(ReDocRED, tmp_path, data_dir=str(source_dir))
    assert sorted(ds) == ["test", "validation"]  # no train_revised.json in the folder
    assert dataset_to_documents(ds["validation"]) == read_documents(source_dir / "dev_revised.json")
    assert dataset_to_documents(ds["test"]) == read_documents(source_dir / "test_revised.json")


def test_redocred_urls_and_data_files_override_the_download(source_dir, tmp_path):
    test_file = str(source_dir / "test_revised.json")
    by_url = _prepare(ReDocRED, tmp_path / "a", urls={"test": test_file})
    assert list(by_url) == ["test"] and len(by_url["test"]) == N
    by_files = _prepare(ReDocRED, tmp_path / "b", data_files={"validation": str(source_dir / "dev_revised.json")})
    assert list(by_files) == ["validation"] and by_files["validation"][0]["title"] == read_documents(
        source_dir / "dev_revised.json"
    )[0].title
    assert ReDocRED.URLS["test"].startswith("https://") and ReDocRED.URLS["test"].endswith("test_revised.json")


def test_docred_needs_a_manual_download_and_reads_unlabelled_test(source_dir, tmp_path):
    with pytest.raises(FileNotFoundError, match="Google Drive"):
        _prepare(DocRED, tmp_path / "none")
    folder = tmp_path / "docred"
    folder.mkdir()
    dev = json.loads((source_dir / "dev_revised.json").read_text())
    test = json.loads((source_dir / "test_revised.json").read_text())
    for doc in test:
        del doc["labels"]  # DocRED's test split is unlabelled
    (folder / "dev.json").write_text(json.dumps(dev))
    (folder / "test.json").write_text(json.dumps(test))
    ds = _prepare(DocRED, tmp_path, data_dir=str(folder))
    assert sorted(ds) == ["test", "validation"]
    assert set(ds["test"]["has_labels"]) == {False} and set(ds["validation"]["has_labels"]) == {True}
    assert [d.title for d in dataset_to_documents(ds["test"])] == [d["title"] for d in test]


def test_an_envre_build_folder_loads_without_a_builder(source_dir, tmp_path):
    """What docs/benchmarks.md promises in place of the removed Env-* builders."""
    from _renaming_fakes import FakePipeline

    from datasets import load_dataset

    from envre_hf.documents.build_folder import read_benchmark
    from envre_hf.renaming.builder import BuildConfig, build_split

    out = tmp_path / "env_redocred"
    for name, split in (("test_revised.json", "test"), ("dev_revised.json", "validation")):
        build_split(FakePipeline(), source_dir / name, BuildConfig(out, split=split, seeds=(0, 1), progress=False))
    ds = load_dataset(str(out))
    assert sorted(ds) == ["test", "validation"] and len(ds["test"]) == 2 * N
    for split in ds:
        docs = dataset_to_documents(ds[split])
        assert docs == read_benchmark(out, split)
        assert docs[0].substitutions and docs[0].doc_id.endswith("#0")  # provenance survives


def test_rebuilt_folder_is_not_served_from_a_stale_cache(source_dir, tmp_path):
    folder = tmp_path / "src"
    folder.mkdir()
    docs = json.loads((source_dir / "test_revised.json").read_text())
    (folder / "test_revised.json").write_text(json.dumps(docs[:3]))
    first = _prepare(ReDocRED, tmp_path, data_dir=str(folder))
    assert len(first["test"]) == 3
    (folder / "test_revised.json").write_text(json.dumps(docs[3:8]))
    second = _prepare(ReDocRED, tmp_path, data_dir=str(folder))  # same cache_dir, same data_dir
    assert [row["title"] for row in second["test"]] == [d["title"] for d in docs[3:8]]
