"""The build's resumable work log: fsync cadence, reopening, cut-short lines, and when a work folder is reused."""

from __future__ import annotations

import json

import pytest

from envre_hf.renaming import worklog as worklog_module
from envre_hf.renaming.output_folder import BuildError
from envre_hf.renaming.worklog import WorkLog, prepare_work_folder


def _record(doc: int, seed: int = 0) -> dict:
    return {"doc": doc, "seed": seed, "leaks": 0, "row": {"title": f"d{doc}"}}


def test_records_are_fsynced_every_n_appends_and_on_close(tmp_path, monkeypatch):
    synced = []
    monkeypatch.setattr(worklog_module.os, "fsync", lambda fd: synced.append(fd))
    log = WorkLog(tmp_path, fsync_every=3)
    counts = []
    for doc in range(7):
        log.append(_record(doc))
        counts.append(len(synced))
    assert counts == [0, 0, 1, 1, 1, 2, 2]  # after the 3rd and the 6th record
    log.close()
    assert len(synced) == 3  # the 7th record, at close
    log.close()
    log.sync()
    assert len(synced) == 3  # nothing left to sync, no file open
    lines = (tmp_path / "records.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["doc"] for line in lines] == list(range(7))


def test_a_closed_log_reopens_on_the_next_append(tmp_path, monkeypatch):
    monkeypatch.setattr(worklog_module.os, "fsync", lambda fd: None)
    log = WorkLog(tmp_path, fsync_every=100)
    log.append(_record(0))
    log.close()
    log.append(_record(1, seed=2))
    log.close()
    again = WorkLog(tmp_path, fsync_every=100)
    again.read()
    assert sorted(again.records) == [(0, 0), (1, 2)]


@pytest.mark.parametrize("tail", [b'{"doc": 2, "seed"', b"not json\n"])
def test_a_line_cut_short_by_a_kill_is_dropped_and_truncated_away(tmp_path, tail):
    path = tmp_path / "records.jsonl"
    good = "".join(json.dumps(_record(d)) + "\n" for d in range(2)).encode()
    path.write_bytes(good + tail)
    log = WorkLog(tmp_path, fsync_every=1)
    log.read()
    assert sorted(log.records) == [(0, 0), (1, 0)]
    assert path.read_bytes() == good


def test_everything_after_a_corrupt_line_is_dropped(tmp_path):
    path = tmp_path / "records.jsonl"
    first = json.dumps(_record(0)) + "\n"
    path.write_text(first + "garbage\n" + json.dumps(_record(1)) + "\n", encoding="utf-8")
    log = WorkLog(tmp_path, fsync_every=1)
    log.read()
    assert sorted(log.records) == [(0, 0)]  # records after a corrupt line cannot be trusted: done again
    assert path.read_text(encoding="utf-8") == first


def _manifest(fingerprint: str) -> dict:
    return {"fingerprint": fingerprint, "seeds": [0]}


def test_a_work_folder_is_resumed_replaced_or_refused(tmp_path):
    work = prepare_work_folder(tmp_path, "test", _manifest("a"), resume=False, overwrite=False)
    (work / "records.jsonl").write_text("kept\n", encoding="utf-8")
    # the same build, resumed (with or without --overwrite): the records stay
    for overwrite in (False, True):
        assert prepare_work_folder(tmp_path, "test", _manifest("a"), resume=True, overwrite=overwrite) == work
        assert (work / "records.jsonl").read_text(encoding="utf-8") == "kept\n"
    with pytest.raises(BuildError, match="pass --resume"):
        prepare_work_folder(tmp_path, "test", _manifest("a"), resume=False, overwrite=False)
    with pytest.raises(BuildError, match="different input"):
        prepare_work_folder(tmp_path, "test", _manifest("b"), resume=True, overwrite=False)
    assert (work / "records.jsonl").exists()
    # another build with --overwrite: the unfinished one is replaced
    assert prepare_work_folder(tmp_path, "test", _manifest("b"), resume=True, overwrite=True) == work
    assert not (work / "records.jsonl").exists()
    assert json.loads((work / "manifest.json").read_text(encoding="utf-8"))["fingerprint"] == "b"


def test_an_appended_record_is_on_disk_before_the_next_one(tmp_path, monkeypatch):
    """A process killed right after an append must not lose that record: it is flushed at once."""
    monkeypatch.setattr(worklog_module.os, "fsync", lambda fd: None)
    log = WorkLog(tmp_path, fsync_every=100)
    log.append(_record(0))
    on_disk = (tmp_path / "records.jsonl").read_text(encoding="utf-8")
    assert [json.loads(line)["doc"] for line in on_disk.splitlines()] == [0]
    log.close()


@pytest.mark.parametrize(
    "bad",
    [
        b"\0" * 40 + b"\n",  # what a machine crash can leave at the end of an appended file (zeros, then data)
        b"null\n",
        b"[]\n",
        b'{"doc": 2}\n',
        b'{"doc": 2, "seed": 0}\n',  # neither a row nor an error
        b'{"doc": "2", "seed": 0, "leaks": 0, "row": {}}\n',
        b'{"doc": 2, "seed": 0, "error": "boom"}\n',
    ],
)
def test_a_line_that_is_not_a_record_ends_the_good_records(tmp_path, bad):
    path = tmp_path / "records.jsonl"
    good = "".join(json.dumps(_record(d)) + "\n" for d in range(2)).encode()
    path.write_bytes(good + bad + json.dumps(_record(3)).encode() + b"\n")
    log = WorkLog(tmp_path, fsync_every=1)
    log.read()
    assert sorted(log.records) == [(0, 0), (1, 0)]  # the damaged line and what follows are done again
    assert path.read_bytes() == good


def test_a_records_file_with_a_zeroed_line_resumes_to_the_same_bytes(tmp_path):
    from _renaming_fakes import FakePipeline, build_with
    from malformed_inputs import SAMPLE_DOCS

    clean = tmp_path / "clean"
    build_with(FakePipeline(), SAMPLE_DOCS, clean)
    out = tmp_path / "env"
    with pytest.raises(RuntimeError, match="simulated crash"):
        build_with(FakePipeline(crash_after=3), SAMPLE_DOCS, out)
    records = out / ".build" / "test" / "records.jsonl"
    lines = records.read_bytes().splitlines(keepends=True)
    records.write_bytes(lines[0] + b"\0" * len(lines[1]) + lines[2])  # the 2nd record lost to a crash
    result = build_with(FakePipeline(), SAMPLE_DOCS, out, resume=True)
    assert result.resumed == 1
    data = sorted(p.relative_to(clean) for p in clean.rglob("*.parquet"))
    assert data and all((out / p).read_bytes() == (clean / p).read_bytes() for p in data)


@pytest.mark.parametrize("damage", ["[]", '{"fingerp', ""])
def test_a_damaged_manifest_is_refused_on_resume_and_replaced_with_overwrite(tmp_path, damage):
    work = prepare_work_folder(tmp_path, "test", _manifest("a"), resume=False, overwrite=False)
    (work / "records.jsonl").write_text(json.dumps(_record(0)) + "\n", encoding="utf-8")
    (work / "manifest.json").write_text(damage, encoding="utf-8")
    with pytest.raises(BuildError, match="manifest.json.*--overwrite"):
        prepare_work_folder(tmp_path, "test", _manifest("a"), resume=True, overwrite=False)
    assert (work / "records.jsonl").exists()  # nothing removed without --overwrite
    assert prepare_work_folder(tmp_path, "test", _manifest("a"), resume=True, overwrite=True) == work
    assert not (work / "records.jsonl").exists()
    assert json.loads((work / "manifest.json").read_text(encoding="utf-8"))["fingerprint"] == "a"
