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
