"""The one document reader: ``read_documents(..., on_error=...)`` and the build-folder reader (one owner, used by
the library and by envre analyze / evaluate --env / icl)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from envre_hf.documents import DocumentError, read_documents
from envre_hf.documents.build_folder import BuildFolderError, read_benchmark

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture()
def mixed_file(tmp_path, redocred_dev):
    """Four documents as JSON Lines: the second is not JSON, the third is malformed."""
    from envre_hf.documents import to_docred

    good = [json.dumps(to_docred(d)) for d in redocred_dev[:2]]
    broken = dict(to_docred(redocred_dev[2]), vertexSet="nope")
    path = tmp_path / "mixed.jsonl"
    path.write_text("\n".join([good[0], "{not json", json.dumps(broken), good[1]]) + "\n", encoding="utf-8")
    return path


def test_on_error_callable_skips_and_reports_each_bad_document(mixed_file, redocred_dev):
    seen = []
    docs = read_documents(mixed_file, on_error=lambda err, raw: seen.append((err.doc_index, raw)))
    assert [d.title for d in docs] == [redocred_dev[0].title, redocred_dev[1].title]
    assert [i for i, _ in seen] == [1, 2]
    assert seen[0][1] is None  # the line was not JSON
    assert seen[1][1]["title"] == redocred_dev[2].title and seen[1][1]["vertexSet"] == "nope"


def test_on_error_fail_raises_naming_the_file_and_a_callable_may_stop(mixed_file):
    with pytest.raises(DocumentError, match=f"{mixed_file}: line 2 is not valid JSON"):
        read_documents(mixed_file)

    def stop(err, raw):
        raise err

    with pytest.raises(DocumentError, match="document 1"):
        read_documents(mixed_file, on_error=stop)
    with pytest.raises(ValueError, match="on_error"):
        read_documents(mixed_file, on_error="skip")


@pytest.fixture()
def two_split_folder(tmp_path, redocred_dev):
    """A build folder with splits test (2 documents) and test_hard (1 document x 2 seeds)."""
    from envre_hf.documents import write_documents
    from envre_hf.renaming.builder import BuildConfig, build_split

    class Retitle:
        def rename(self, doc, seed):
            import dataclasses

            return dataclasses.replace(doc, title=f"{doc.title} ({seed})")

    out = tmp_path / "bench"
    write_documents(redocred_dev[:2], tmp_path / "a.json")
    write_documents(redocred_dev[2:3], tmp_path / "b.json")
    build_split(Retitle(), tmp_path / "a.json", BuildConfig(out, split="test", seeds=(0,), progress=False))
    build_split(Retitle(), tmp_path / "b.json", BuildConfig(out, split="test_hard", seeds=(0, 1), progress=False))
    return out


def test_read_benchmark_reads_exactly_one_split_and_names_the_others(two_split_folder):
    assert len(read_benchmark(two_split_folder, "test")) == 2  # test_hard shards are not test's
    assert len(read_benchmark(two_split_folder, "test_hard")) == 2
    assert len(read_documents(two_split_folder)) == 4
    assert [d.key for d in read_documents(two_split_folder, split="test")] == [
        d.key for d in read_benchmark(two_split_folder, "test")
    ]
    with pytest.raises(FileNotFoundError, match=r"no data/validation-\*\.parquet files \(splits there: test, test_hard"):
        read_benchmark(two_split_folder, "validation")


def test_read_benchmark_refuses_a_folder_with_a_split_write_cut_short(two_split_folder):
    from envre_hf.documents.build_folder import WORK_DIR

    mark = two_split_folder / WORK_DIR / "test"  # what envre build leaves while it writes split test
    mark.parent.mkdir(parents=True)
    mark.write_text("writing\n", encoding="utf-8")
    (mark.parent / ".test.x1.tmp").write_text("", encoding="utf-8")  # a killed write's temporary file: no split
    with pytest.raises(BuildFolderError, match="split\\(s\\) test was cut short; run the same envre build again"):
        read_benchmark(two_split_folder, "test_hard")


def test_the_commands_read_build_folders_with_the_library_reader():
    """One owner: the CLI modules read build folders with ``read_documents`` (``read_benchmark`` beneath it) and
    choose the split with ``envre_hf.cli.common.chosen_split``, none with a reader or a chooser of its own."""
    for name in ("analyze", "evaluate", "icl", "probe"):
        text = (REPO / "envre_hf" / "cli" / f"{name}.py").read_text(encoding="utf-8")
        assert "def read_benchmark" not in text and "from .analyze import read_benchmark" not in text
        assert "read_documents(" in text and "chosen_split(" in text


def test_read_documents_takes_every_kind_of_source(tmp_path, redocred_dev, monkeypatch):
    import gzip

    import datasets

    from envre_hf.documents import documents_to_dataset, to_docred, write_documents

    docs = redocred_dev[:3]
    keys = [d.key for d in docs]
    write_documents(docs, tmp_path / "docs.jsonl")
    with gzip.open(tmp_path / "docs.json.gz", "wt", encoding="utf-8") as fh:
        json.dump([to_docred(d) for d in docs], fh)
    for name in ("docs.jsonl", "docs.json.gz"):
        assert [d.key for d in read_documents(tmp_path / name)] == keys
    both = datasets.DatasetDict({"validation": documents_to_dataset(docs[:1]), "test": documents_to_dataset(docs[1:])})
    assert [d.key for d in read_documents(both)] == keys
    assert [d.key for d in read_documents(both, split="test")] == keys[1:]
    assert [d.key for d in read_documents(both["validation"])] == keys[:1]
    both.save_to_disk(str(tmp_path / "saved"))
    assert [d.key for d in read_documents(tmp_path / "saved", split="validation")] == keys[:1]
    with pytest.raises(KeyError, match="splits there: validation, test"):
        read_documents(both, split="train")
    # a Hub id goes to datasets.load_dataset with the split; a missing file stays a missing file
    calls = []
    monkeypatch.setattr(datasets, "load_dataset", lambda name, split=None: calls.append((name, split)) or both)
    assert [d.key for d in read_documents("envre/env_redocred")] == keys and calls == [("envre/env_redocred", None)]
    with pytest.raises(FileNotFoundError):
        read_documents("missing/dev_revised.json")
    with pytest.raises(ValueError, match="has no splits"):
        read_documents(tmp_path / "docs.jsonl", split="test")
    with pytest.raises(TypeError, match="cannot read documents from a int"):
        read_documents(3)


@pytest.mark.parametrize(
    "text",
    ["[]", " [ ] ", "[1, 2, 3]", '[{"a": [1, {"b": 2}]}, {"c": "]"}]', '{"a": 1}', "[1, 2", "[1 2]", "[1,]", "[1] x",
     "[1]]", "", "null", "[", "  [\n{\"a\": 1}\n,\n{\"b\": 2}\n]\n", "[" * 5000 + "]" * 5000],
)
def test_a_json_list_is_read_item_by_item_as_json_reads_it_whole(text, tmp_path):
    """Items are parsed one at a time (each let go before the next); what comes out, or the error, is that of
    parsing the whole text."""
    from envre_hf.documents.io import parse_json, read_raw_documents

    path = tmp_path / "docs.json"
    path.write_text(text, encoding="utf-8")
    try:
        whole = parse_json(text, path)
    except DocumentError as err:
        with pytest.raises(DocumentError) as streamed:
            read_raw_documents(path)
        assert str(streamed.value) == str(err)
        return
    if isinstance(whole, dict):
        whole = [whole]
    if isinstance(whole, list):
        assert read_raw_documents(path) == whole
    else:
        with pytest.raises(DocumentError, match="expected a JSON list of documents"):
            read_raw_documents(path)
