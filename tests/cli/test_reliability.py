"""Nothing lost, nothing half-written: kills during a rebuild's final write, owned and locked build folders,
different builds refused without --overwrite, split names, duplicate keys, a full disk, pickled weights,
model paths, gzip input and control characters in knowledge-base names."""

from __future__ import annotations

import errno
import gzip
import json
import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from envre_hf.atomic import atomic_open, write_json
from envre_hf.cli.main import main
from envre_hf.documents import DocumentError, read_documents
from envre_hf.documents.build_folder import WORK_DIR, unfinished_splits
from envre_hf.renaming.builder import BuildConfig, BuildError, build_split
from envre_hf.renaming.output_folder import MARKER_FILE, locked_output_folder
from malformed_inputs import SAMPLE_DOCS, SAMPLE_PREDICTIONS, SAMPLE_TRAIN
from _renaming_fakes import FakePipeline

TESTS = Path(__file__).resolve().parents[1]
ROOT = TESTS.parent


def _build(out: Path, seeds=(0,), split="test", input_path=SAMPLE_DOCS, **config) -> object:
    return build_split(
        FakePipeline(), input_path, BuildConfig(out, split=split, seeds=seeds, progress=False, **config)
    )


def _load(out: Path, split: str = "test"):
    from datasets import load_dataset

    return load_dataset(str(out), split=split, download_mode="force_redownload")


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.name != MARKER_FILE
    }


def _one_line(capsys) -> str:
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


# --------------------------------------------------------------------------- kills during the final write

KILLER = textwrap.dedent(
    """
    import os, signal, sys
    from pathlib import Path
    sys.path.insert(0, {tests!r})
    from _renaming_fakes import FakePipeline
    from envre_hf.renaming.builder import BuildConfig, build_split

    out, victim = Path(sys.argv[1]), sys.argv[2]
    real_replace = os.replace

    def replace(src, dst, *args, **kwargs):
        if Path(dst).name == victim:
            os.kill(os.getpid(), signal.SIGKILL)  # kill -9 just before this file is put in place
        return real_replace(src, dst, *args, **kwargs)

    os.replace = replace
    config = BuildConfig(out, split="test", seeds=(0, 1), progress=False, overwrite=True)
    build_split(FakePipeline(), {docs!r}, config)
    """
)


def _rebuild_killed_before(out: Path, victim: str) -> int:
    script = KILLER.format(tests=str(TESTS), docs=str(SAMPLE_DOCS))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-c", script, str(out), victim], env=env, timeout=600).returncode


@pytest.mark.parametrize(
    "victim, touched",
    [
        ("test-00000-of-00001.parquet", False),  # every document renamed, no final file replaced yet
        ("README.md", True),  # shards, statistics and names replaced, the card not yet
    ],
)
def test_kill_9_during_the_final_write_of_a_rebuild(victim, touched, tmp_path, capsys):
    out = tmp_path / "env"
    _build(out, seeds=(0,))
    old = _snapshot(out)
    assert len(_load(out)) == 3

    assert _rebuild_killed_before(out, victim) == -9
    files = {k: v for k, v in _snapshot(out).items() if not k.startswith(WORK_DIR) and not k.endswith(".tmp")}
    assert (files == old) is not touched  # each file is whole, the old one or the new one
    assert unfinished_splits(out) == ["test"]  # the clear incomplete marker...
    capsys.readouterr()
    assert main(["analyze", "--original", str(SAMPLE_DOCS), "--renamed", str(out), "--output",
                 str(tmp_path / "a")]) == 2
    assert "run the same envre build again" in _one_line(capsys)  # ...that readers report, with the fix
    result = _build(out, seeds=(0, 1), overwrite=True)  # the same build again repairs it
    assert not unfinished_splits(out) and not (out / WORK_DIR).exists()
    rows = _load(out)
    assert len(rows) == 6 and sorted(set(rows["seed"])) == [0, 1]
    stats = json.loads((out / "statistics.json").read_text())
    assert stats["test"]["seeds"] == [0, 1] and result.statistics["renamed_documents"] == 6
    card = (out / "README.md").read_text()
    assert "num_examples: 6" in card
    # the repaired folder is byte-identical to an uninterrupted build of the same thing
    clean = tmp_path / "clean"
    _build(clean, seeds=(0, 1))
    assert _snapshot(out) == _snapshot(clean)


# --------------------------------------------------------------------------- owned, locked folders


def test_a_folder_not_written_by_envre_is_refused(tmp_path, capsys):
    theirs = tmp_path / "theirs"
    (theirs / "data").mkdir(parents=True)
    (theirs / "README.md").write_text("my own dataset")
    (theirs / "data" / "test-00000-of-00001.parquet").write_bytes(b"PAR1 my data PAR1")
    before = _snapshot(theirs)
    with pytest.raises(BuildError, match="not written by envre build"):
        _build(theirs)
    capsys.readouterr()
    assert main(["build", "--input", str(SAMPLE_DOCS), "--kb", "corpus", "--kb-pool", str(SAMPLE_TRAIN),
                 "--split", "test", "--overwrite", "--no-progress", "--output", str(theirs)]) == 2
    assert "not written by envre build" in _one_line(capsys)
    assert _snapshot(theirs) == before and not (theirs / MARKER_FILE).exists()
    empty = tmp_path / "empty"
    empty.mkdir()
    _build(empty)  # an empty folder is fine, and becomes ours
    assert (empty / MARKER_FILE).is_file()


def test_a_different_build_of_a_split_is_refused_without_overwrite(tmp_path):
    out = tmp_path / "env"
    _build(out, seeds=(0, 1, 2))
    before = _snapshot(out)
    with pytest.raises(BuildError, match=r"seeds \[0, 1, 2\] -> \[0\].*pass overwrite=True"):
        _build(out, seeds=(0,))
    with pytest.raises(BuildError, match="input"):
        _build(out, seeds=(0, 1, 2), input_path=SAMPLE_TRAIN)
    assert _snapshot(out) == before
    _build(out, seeds=(0, 1, 2))  # the same build again is allowed (and gives the same bytes)
    assert _snapshot(out) == before
    _build(out, seeds=(0,), overwrite=True)
    assert len(_load(out)) == 3


def test_a_concurrent_build_of_the_same_folder_is_refused(tmp_path):
    out = tmp_path / "env"
    _build(out)
    before = _snapshot(out)
    with locked_output_folder(out):  # another build holds the lock
        with pytest.raises(BuildError, match="another envre build"):
            _build(out, split="validation")
    assert _snapshot(out) == before
    _build(out, split="validation")  # the lock is released with its holder
    assert sorted(json.loads((out / "statistics.json").read_text())) == ["test", "validation"]


def test_split_names_are_checked_before_anything_is_written(tmp_path):
    with pytest.raises(ValueError, match="test_hard instead of test-hard"):
        _build(tmp_path / "env", split="test-hard")
    assert not (tmp_path / "env").exists()
    out = tmp_path / "env2"
    _build(out, split="test_hard", seeds=(0, 1))
    _build(out, split="test")
    # writing "test" kept the test_hard shards, and reading "test" does not pick them up
    assert (out / "data" / "test_hard-00000-of-00001.parquet").exists()
    assert len(_load(out, "test")) == 3 and len(_load(out, "test_hard")) == 6
    from envre_hf.documents.build_folder import read_benchmark

    assert len(read_benchmark(out, "test")) == 3 and len(read_benchmark(out, "test_hard")) == 6



@pytest.mark.parametrize(
    "name, content, field",
    [
        ("statistics.json", b"[1]", "expected a JSON object"),
        ("statistics.json", b"5", "expected a JSON object"),
        ("statistics.json", b"null", "expected a JSON object"),
        ("statistics.json", b'{"test": 5}', "split 'test'"),
        ("statistics.json", b'{"test": []}', "split 'test'"),
        ("statistics.json", b'{"validation": "x"}', "split 'validation'"),
        ("statistics.json", b'{"test": {"data_files": 5}}', "split 'test' field 'data_files'"),
        ("statistics.json", b'{"validation": {"seeds": [0]}}', "split 'validation' field 'data_files'"),
        ("names_used.json", b"[1]", "expected a JSON object"),
        ("names_used.json", b"5", "expected a JSON object"),
        ("names_used.json", b'{"format": "envre-names-used/1"}', "field 'splits'"),
        ("names_used.json", b'{"format": "envre-names-used/1", "splits": ["test"]}', "field 'splits'"),
        ("names_used.json", b'{"format": "envre-names-used/1", "splits": {"validation": 5}}', "'splits' -> 'validation'"),
        ("names_used.json", b'{"splits": {}}', "field 'format'"),
    ],
)
@pytest.mark.parametrize("overwrite", [False, True])
def test_a_hand_edited_build_file_of_the_wrong_shape_is_one_line_and_changes_nothing(
    name, content, field, overwrite, tmp_path, capsys
):
    out = tmp_path / "env"
    _build(out)
    (out / name).write_bytes(content)
    before = _snapshot(out)
    args = ["build", "--input", str(SAMPLE_DOCS), "--kb", "corpus", "--kb-pool", str(SAMPLE_TRAIN), "--split",
            "test", "--copies", "1", "--output", str(out), "--no-progress"] + ["--overwrite"] * overwrite
    capsys.readouterr()
    assert main(args) == 2
    line = _one_line(capsys)
    assert str(out / name) in line and field in line, line
    assert _snapshot(out) == before and not (out / WORK_DIR).exists()


# --------------------------------------------------------------------------- links in output folders


def _outside(tmp_path: Path) -> Path:
    """A folder outside the output folder, holding what a link would expose: a file and a stale-looking shard."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "test-00000-of-00002.parquet").write_bytes(b"someone else's")
    (elsewhere / "mine.txt").write_text("keep me")
    return elsewhere


@pytest.mark.parametrize("linked", ["data", "statistics.json", "data/test-00000-of-00001.parquet"])
def test_a_rebuild_never_writes_or_deletes_through_a_link_in_its_folder(linked, tmp_path, capsys):
    """A link where the build's own folder or file goes is one line naming it; the folder it points to is left
    exactly as it was (its stale-looking shard is not deleted), and so is the build folder."""
    out, elsewhere = tmp_path / "env", _outside(tmp_path)
    argv = ["build", "--input", str(SAMPLE_DOCS), "--split", "test", "--kb", "corpus", "--kb-pool", str(SAMPLE_DOCS),
            "--output", str(out), "--no-progress"]  # fmt: skip
    assert main(argv) == 0
    target = elsewhere if linked == "data" else elsewhere / "mine.txt"
    if linked == "data":
        for shard in (out / "data").iterdir():
            shard.rename(elsewhere / shard.name)
        (out / "data").rmdir()
    else:
        (out / linked).unlink()
    (out / linked).symlink_to(target)
    before, inside = _snapshot(elsewhere), _snapshot(out)
    capsys.readouterr()
    assert main(argv) == 2
    line = _one_line(capsys)
    assert line.startswith(f"envre build: error: {out / linked}: a symbolic link where envre writes"), line
    assert _snapshot(elsewhere) == before and _snapshot(out) == inside


def test_record_logs_and_run_folders_refuse_a_link_and_atomic_writes_replace_one(tmp_path):
    from envre_hf.atomic import LinkedPathError, RecordLog, load_jsonl_records, open_run_log, write_text

    elsewhere = _outside(tmp_path)
    run = tmp_path / "run"
    run.mkdir()
    (run / "records.jsonl").symlink_to(elsewhere / "mine.txt")
    (run / "dangling.jsonl").symlink_to(elsewhere / "new.jsonl")  # appending would create the file it names
    for name in ("records.jsonl", "dangling.jsonl"):
        with pytest.raises(LinkedPathError) as info:
            load_jsonl_records(run / name)
        assert info.value.filename == str(run / name) and info.value.errno == errno.ELOOP
        with pytest.raises(LinkedPathError):
            RecordLog(run / name, key=str).append({"doc": 0})
    with pytest.raises(LinkedPathError):
        open_run_log(run, "records.jsonl", "config.json", {"a": 1}, True, ValueError)
    assert not (run / "config.json").exists()  # refused before anything is written
    # a file written whole (atomic_path) replaces a link at its name: the file it pointed to is untouched
    write_text(run / "report.md", "new")
    (run / "scores.json").symlink_to(elsewhere / "mine.txt")
    write_text(run / "scores.json", "ours")
    assert not (run / "scores.json").is_symlink() and (run / "scores.json").read_text() == "ours"
    assert (elsewhere / "mine.txt").read_text() == "keep me" and not (elsewhere / "new.jsonl").exists()


# --------------------------------------------------------------------------- documents


def test_duplicate_document_keys_are_refused_by_every_reader(tmp_path):
    docs = json.loads(SAMPLE_DOCS.read_text())
    dup = tmp_path / "dup.json"
    dup.write_text(json.dumps(docs + [docs[0]]))
    with pytest.raises(DocumentError, match="duplicate document key 'Harwick Valley Orchestra'.*document 0"):
        read_documents(dup)
    with pytest.raises(DocumentError, match="duplicate document key"):
        _build(tmp_path / "env", input_path=dup, on_error="skip")
    assert not (tmp_path / "env").exists()
    from envre_hf.kb.corpus import CorpusKB  # noqa: F401  (--kb-pool reads with read_documents too)


def test_gzipped_input_is_decompressed(tmp_path):
    plain = read_documents(SAMPLE_DOCS)
    packed = tmp_path / "docs.json.gz"
    packed.write_bytes(gzip.compress(SAMPLE_DOCS.read_bytes()))
    lines = tmp_path / "docs.jsonl.gz"
    lines.write_bytes(gzip.compress("\n".join(json.dumps(d) for d in json.loads(SAMPLE_DOCS.read_text())).encode()))
    assert read_documents(packed) == plain and read_documents(lines) == plain


# --------------------------------------------------------------------------- a full disk


def test_a_full_disk_leaves_the_old_output_and_one_line(tmp_path, monkeypatch, capsys):
    import datasets

    import envre_hf.atomic as atomic

    out = tmp_path / "env"
    _build(out)
    before = _snapshot(out)

    def disk_fills_up(self, path, *args, **kwargs):  # half a shard written, then the disk is full
        Path(path).write_bytes(b"PAR1" + b"\0" * 100)
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(datasets.Dataset, "to_parquet", disk_fills_up)
    with pytest.raises(OSError) as info:
        _build(out, seeds=(0, 1), overwrite=True)
    assert info.value.errno == errno.ENOSPC and info.value.filename.endswith("test-00000-of-00001.parquet")
    monkeypatch.undo()
    assert {k: v for k, v in _snapshot(out).items() if not k.startswith(WORK_DIR)} == before
    assert len(_load(out)) == 3 and not list(out.rglob("*.tmp")) and unfinished_splits(out) == ["test"]
    _build(out, seeds=(0, 1), overwrite=True)  # space freed: the same build again finishes the rebuild
    assert len(_load(out)) == 6 and not unfinished_splits(out)

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    scores = tmp_path / "scores.json"
    scores.write_text('{"old": true}')
    monkeypatch.setattr(atomic.os, "fsync", full)
    capsys.readouterr()
    assert main(["evaluate", "--predictions", str(SAMPLE_PREDICTIONS), "--gold", str(SAMPLE_DOCS),
                 "--output", str(scores)]) == 2
    line = _one_line(capsys)
    assert str(scores) in line and "no space left on device" in line
    assert scores.read_text() == '{"old": true}' and not list(tmp_path.glob(".*.tmp"))


def test_atomic_writes_keep_the_old_file_when_the_writer_fails(tmp_path):
    path = tmp_path / "report.json"
    write_json(path, {"v": 1})
    with pytest.raises(RuntimeError):
        with atomic_open(path) as fh:
            fh.write('{"v": 2, "half')
            raise RuntimeError("killed mid-write")
    assert json.loads(path.read_text()) == {"v": 1} and [p.name for p in tmp_path.iterdir()] == ["report.json"]


@pytest.mark.parametrize("bad", [b"\0" * 30 + b"\n", b"[1]\n", b"null\n"])
def test_append_only_logs_end_at_a_line_that_is_not_a_record(tmp_path, bad):
    """ICL results.jsonl / attribution records: zeros a machine crash left, or a line that is not an object,
    end the good records (truncated away) instead of stopping the resume with a decoding error."""
    from envre_hf.atomic import load_jsonl_records

    path = tmp_path / "results.jsonl"
    good = b'{"doc": 0}\n{"doc": 1}\n'
    path.write_bytes(good + bad + b'{"doc": 2}\n')
    assert load_jsonl_records(path) == [{"doc": 0}, {"doc": 1}]
    assert path.read_bytes() == good


@pytest.mark.parametrize(
    "name, content, field",
    [
        ("names_used.json", b'{"format": "envre-names-used/1", "splits": ["a"]}', "field 'splits'"),
        ("names_used.json", b'{"format": "envre-names-used/1", "splits": {"dev": 5}}', "'splits' -> 'dev'"),
        ("names_used.json", b'{"format": "envre-names-used/1", "splits": {"dev": ["Ann", 7]}}', "'splits' -> 'dev'"),
        ("names_used.json", b'{"format": "envre-names-used/1"}', "field 'splits'"),
        ("names_used.json", b'{"format": "envre-names-used/1", "splits": {"te', "not valid JSON"),
        ("names_used.json", b'\xff{"format": "envre-names-used/1", "splits": {}}', "UTF-8"),
        ("names_used.json", b"[]", "expected a JSON object"),
        ("names_used.json", b"5", "expected a JSON object"),
        ("names_used.json", b"{}", "field 'format'"),
        ("other.json", b'{"format": "envre-names-used/1", "splits": {"te', "not valid JSON"),
        ("names.txt", b"Ann\n\xffBob\n", "UTF-8"),
    ],
)
def test_a_bad_exclude_names_file_is_one_line_naming_it(name, content, field, tmp_path, capsys):
    bad = tmp_path / "excl" / name
    bad.parent.mkdir()
    bad.write_bytes(content)
    out = tmp_path / "env"
    args = ["build", "--input", str(SAMPLE_DOCS), "--kb", "corpus", "--kb-pool", str(SAMPLE_TRAIN), "--split",
            "test", "--copies", "1", "--output", str(out), "--no-progress", "--exclude-names-from", str(bad)]
    capsys.readouterr()
    assert main(args) == 2
    line = _one_line(capsys)
    assert str(bad) in line and field in line, line
    assert not (out / "data").exists()


def test_a_lone_surrogate_escape_is_refused_naming_file_document_and_field(tmp_path, capsys):
    """JSON may escape half of a UTF-16 pair (\\ud800): such text cannot be written as UTF-8. The reader used
    to accept it, and envre build then stopped at its work log with a message naming no file or document."""
    raw = json.loads(SAMPLE_DOCS.read_text(encoding="utf-8"))
    raw[0]["sents"][0][0] = "caf\u00e9 \U0001F600"  # a proper pair (ensure_ascii escapes it as one) is fine
    raw[1]["sents"][0][2] = "x\ud800"
    bad = tmp_path / "test_surrogate.json"
    bad.write_text(json.dumps(raw), encoding="utf-8")  # ensure_ascii: \ud800 and \ud83d\ude00 escapes
    assert "\\ud800" in bad.read_text(encoding="utf-8")
    with pytest.raises(DocumentError) as err:
        read_documents(bad)
    message = str(err.value)
    assert str(bad) in message and "document 1" in message and "Tomas Berglund" in message
    assert "sents[0][2]" in message and "surrogate" in message
    out = tmp_path / "env"
    args = ["build", "--input", str(bad), "--kb", "corpus", "--kb-pool", str(SAMPLE_TRAIN), "--split", "test",
            "--copies", "1", "--output", str(out), "--no-progress"]
    capsys.readouterr()
    assert main(args) == 2
    line = _one_line(capsys)
    assert str(bad) in line and "document 1" in line and "sents[0][2]" in line, line
    assert main(args + ["--on-error", "skip"]) == 0  # listed, the others built
    errors = [json.loads(x) for x in (out / "errors" / "test.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [(e["doc_index"], e["seed"], e["title"]) for e in errors] == [(1, None, "Tomas Berglund")]
    assert "sents[0][2]" in errors[0]["error"]
    assert len(_load(out)) == 2 and "\U0001F600" in " ".join(_load(out)[0]["sents"][0])


# --------------------------------------------------------------------------- loading


def _pickled_encoder(folder: Path) -> Path:
    import torch
    from safetensors.torch import load_file

    from _training_helpers import save_tiny_encoder

    save_tiny_encoder(folder)
    torch.save(load_file(folder / "model.safetensors"), folder / "pytorch_model.bin")
    (folder / "model.safetensors").unlink()
    return folder


def test_a_pickled_encoder_is_refused_without_unpickling(tmp_path, monkeypatch, capsys):
    import torch

    encoder = _pickled_encoder(tmp_path / "encoder")
    calls = []
    monkeypatch.setattr(torch, "load", lambda *a, **k: calls.append(a) or pytest.fail("torch.load was called"))
    capsys.readouterr()
    code = main(["train", "--model_name_or_path", str(encoder), "--train_file", str(SAMPLE_TRAIN),
                 "--output_dir", str(tmp_path / "run"), "--max_steps", "1", "--report_to", "none"])
    assert code == 2 and "safetensors" in _one_line(capsys) and not calls
    code = main(["evaluate", "--model", str(encoder), "--gold", str(SAMPLE_DOCS)])
    assert code == 2 and not calls
    capsys.readouterr()


def test_damaged_weights_are_one_line(tmp_path, capsys):
    from _pipeline_helpers import save_docre_model

    model = save_docre_model(tmp_path / "model")
    (model / "model.safetensors").write_bytes(b"not a safetensors file")
    capsys.readouterr()
    assert main(["evaluate", "--model", str(model), "--gold", str(SAMPLE_DOCS)]) == 2
    assert "unreadable model weights" in _one_line(capsys)


def test_model_paths_missing_locally_are_errors_unless_hub_ids(tmp_path, monkeypatch):
    """Paths that do not exist are "no such folder" at once; Hub ids (owner/name or bare) are asked of the Hub once
    (a stand-in on 127.0.0.1 here), or of the Hub cache alone under HF_HUB_OFFLINE / with no Hub in reach."""
    import huggingface_hub.constants

    from envre_hf.cli.common import UsageError, model_location
    from hub_standin import LocalHub

    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs").mkdir()
    assert model_location(tmp_path) == str(tmp_path)
    for typo in (tmp_path / "typo", "runs/does-not-exist", "runs/evrt/checkpoint-5", "./model", "~/nope", "../m"):
        with pytest.raises(UsageError, match=r"no such folder$"):
            model_location(typo)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    with LocalHub() as hub:
        hub.files[("model", "owner/name")], hub.shas[("model", "owner/name")] = {"config.json": b"{}"}, "a" * 40
        monkeypatch.setenv("HF_ENDPOINT", hub.endpoint)
        assert model_location("owner/name") == "owner/name"
        for missing in ("owner/missing", "bert-base-cased"):  # a bare id is a Hub id too
            with pytest.raises(UsageError, match="the Hub has no model of that name"):
                model_location(missing)
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{free.getsockname()[1]}"
    monkeypatch.setenv("HF_ENDPOINT", closed)  # nothing listens there: one line, no retries
    with pytest.raises(UsageError, match="cannot be reached"):
        model_location("owner/name")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(UsageError, match="HF_HUB_OFFLINE"):
        model_location("owner/name")
    snapshot = tmp_path / "hub" / "models--owner--name" / "snapshots" / ("b" * 40)
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text("{}")
    (snapshot.parents[1] / "refs").mkdir()
    (snapshot.parents[1] / "refs" / "main").write_text("b" * 40)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    assert model_location("owner/name") == str(snapshot)  # the cached copy, offline
    monkeypatch.delenv("HF_HUB_OFFLINE")
    assert model_location("owner/name") == str(snapshot)  # and with no Hub in reach


# --------------------------------------------------------------------------- knowledge-base names


BAD = {"nul": "\x00", "rlo": "\u202e", "lri": "\u2066", "esc": "\x1b"}
INVISIBLE = {"zwsp": "\u200b", "zwj": "\u200d", "bom": "\ufeff", "soft hyphen": "\u00ad"}


def test_kb_names_are_nfc_and_free_of_control_bidi_and_zero_width_characters():
    from envre_hf.kb.base import clean_name, clean_names

    for char in BAD.values():
        assert clean_name(f"Mark{char}Twain") is None
    for char in INVISIBLE.values():
        assert clean_name(f"Mark{char} Twain") == "Mark Twain"
    assert clean_name("Cafe\u0301\tde\nParis ") == "Caf\u00e9 de Paris"
    assert clean_names(["Paris", "Pa\u200bris", "", "\u200b", "Lyon\u202e"]) == ["Paris"]
    assert clean_names(["Ber\u200blin", "Berlin", "Berl\x00in"]) == ["Berlin"]


def test_control_characters_in_kb_names_never_reach_a_benchmark(tmp_path):
    from envre_hf.kb.corpus import CorpusKB
    from envre_hf.renaming import RenamingPipeline

    docs = json.loads(SAMPLE_TRAIN.read_text())
    tampered = 0
    for doc in docs:  # poison every PER/ORG/LOC name of the pool with one character of each kind
        for e, entity in enumerate(doc["vertexSet"]):
            if entity[0]["type"] in ("PER", "ORG", "LOC"):
                char = list({**BAD, **INVISIBLE}.values())[e % 8]
                for m in entity:
                    doc["sents"][m["sent_id"]][m["pos"][0]] += char
                    tampered += 1
    pool = tmp_path / "pool.json"
    pool.write_text(json.dumps(docs, ensure_ascii=False))
    kb = CorpusKB(read_documents(pool))
    names = [n for item_id in kb._ids for n in kb.names(item_id)]
    forbidden = set(BAD.values()) | set(INVISIBLE.values())
    assert tampered and names and not any(set(n) & forbidden for n in names)
    pipeline = RenamingPipeline(kb)
    renamed = [pipeline.rename(doc, 0) for doc in read_documents(SAMPLE_DOCS)]
    new_names = [s.new_name for doc in renamed for s in doc.substitutions or [] if s.match != "rule"]
    text = " ".join(tok for doc in renamed for sent in doc.sents for tok in sent)
    assert new_names and not set(text) & forbidden and not any(set(n) & forbidden for n in new_names)
