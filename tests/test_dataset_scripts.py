"""The dataset_scripts builders run directly (datasets 5 has no script loading) on local files only."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from envre_hf.documents import dataset_to_documents, read_documents

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dataset_scripts.docred.docred import DocRED  # noqa: E402
from dataset_scripts.env_docred.env_docred import EnvDocRED  # noqa: E402
from dataset_scripts.env_redocred.env_redocred import EnvReDocRED  # noqa: E402
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


def test_env_builders_read_an_envre_build_folder(source_dir, tmp_path):
    from test_build import FakePipeline

    from envre_hf.renaming.build import BuildConfig, build_split

    out = tmp_path / "env_redocred"
    build_split(
        FakePipeline(),
        source_dir / "test_revised.json",
        BuildConfig(out, seeds=(0, 1), progress=False, export_json=True),
    )
    build_split(
        FakePipeline(),
        source_dir / "dev_revised.json",
        BuildConfig(out, split="validation", seeds=(0, 1), progress=False),
    )
    from datasets import load_dataset

    direct = load_dataset(str(out))
    ds = _prepare(EnvReDocRED, tmp_path / "env", data_dir=str(out))
    assert sorted(ds) == ["test", "validation"]
    for split in ds:
        assert dataset_to_documents(ds[split]) == dataset_to_documents(direct[split])
    from_json = _prepare(EnvDocRED, tmp_path / "json", data_files={"validation": str(out / "json" / "test.json")})
    assert dataset_to_documents(from_json["validation"]) == dataset_to_documents(direct["test"])
    assert from_json["validation"][0]["substitutions"]  # provenance survives the DocRED JSON export


def test_rebuilt_folder_is_not_served_from_a_stale_cache(source_dir, tmp_path):
    from test_build import FakePipeline

    from envre_hf.renaming.build import BuildConfig, build_split

    out = tmp_path / "env"
    build_split(FakePipeline(), source_dir / "test_revised.json", BuildConfig(out, seeds=(0,), progress=False))
    first = _prepare(EnvReDocRED, tmp_path, data_dir=str(out))
    assert set(first["test"]["seed"]) == {0}
    # a different build of the same split replaces it only when asked to (--overwrite)
    rebuild = BuildConfig(out, seeds=(3, 4), progress=False, overwrite=True)
    build_split(FakePipeline(), source_dir / "test_revised.json", rebuild)
    second = _prepare(EnvReDocRED, tmp_path, data_dir=str(out))  # same cache_dir, same data_dir
    assert set(second["test"]["seed"]) == {3, 4} and len(second["test"]) == 2 * N
