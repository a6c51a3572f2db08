"""A push against a misbehaving Hub stand-in: bounded, one line naming the Hub, no token printed, exit 2."""

from __future__ import annotations

import json
import time

import pytest
from hub_standin import LocalHub

from envre_hf.cli.main import main
from envre_hf.hub_calls import HubError
from envre_hf.renaming.hub_upload import push_to_hub

TOKEN = "hf_PushSecret0123456789abcd"


@pytest.fixture
def hub(monkeypatch):
    h = LocalHub()
    monkeypatch.setenv("HF_ENDPOINT", h.endpoint)
    monkeypatch.setenv("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    for var, value in (("ENVRE_READ_TIMEOUT", "1"), ("ENVRE_RETRY_AFTER_CAP", "2"), ("ENVRE_REPLY_DEADLINE", "2")):
        monkeypatch.setenv(var, value)
    yield h
    h.close()


@pytest.fixture
def folder(tmp_path):
    out = tmp_path / "built"
    (out / "data").mkdir(parents=True)
    (out / "README.md").write_text("---\npretty_name: t\n---\n# t\n")
    (out / "data" / "test-00000-of-00001.parquet").write_bytes(b"PAR1 not really")
    return out


def test_a_push_reports_its_commit_and_the_hub_has_it(hub, folder):
    info = push_to_hub(folder, "envre/t", token=TOKEN)
    assert info.oid == hub.shas[("dataset", "envre/t")] and len(hub.commits) == 1


def test_retry_after_of_a_day_on_the_commit_is_one_line_at_once(hub, folder):
    hub.faults["commit"] = [("status", 429, {"Retry-After": "86400"}, "{}")]
    start = time.monotonic()
    with pytest.raises(HubError, match=r"push of .* to dataset repo envre/t.*wait 86400 s.*retry after 20\d\d") as info:
        push_to_hub(folder, "envre/t", token=TOKEN)
    assert time.monotonic() - start < 10 and "\n" not in str(info.value) and not hub.commits


def test_a_commit_that_never_answers_ends_at_the_read_timeout(hub, folder):
    hub.faults["commit"] = [("hang", 30)]  # huggingface_hub retries a timeout itself (after 1 s)
    start = time.monotonic()
    info = push_to_hub(folder, "envre/t", token=TOKEN)  # the Hub's own retry then succeeds
    assert time.monotonic() - start < 10 and info.oid == hub.shas[("dataset", "envre/t")]


def test_html_where_json_was_expected_names_the_hub(hub, folder):
    hub.faults["preupload"] = [("html",)]
    with pytest.raises(HubError, match=rf"the Hub at {hub.endpoint} answered the push .* not JSON") as info:
        push_to_hub(folder, "envre/t", token=TOKEN)
    assert "\n" not in str(info.value)


def test_cli_push_failure_is_one_line_exit_2_without_the_token(hub, folder, tmp_path, redocred_test_path,
                                                                 monkeypatch, capsys):
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    small = tmp_path / "test_revised.json"
    small.write_text(json.dumps(json.loads(redocred_test_path.read_text())[:3]))
    echo = json.dumps({"error": f"Invalid credentials in Authorization header: Bearer {TOKEN}"})
    hub.faults["create"] = [("status", 401, {"Content-Type": "application/json"}, echo)]
    code = main(["build", "--input", str(small), "--kb", "corpus", "--kb-pool", str(small), "--copies", "1",
                 "--no-progress", "--output", str(tmp_path / "out"), "--push-to-hub", "envre/t"])
    err = [line for line in capsys.readouterr().err.strip().splitlines() if line.startswith("envre")]
    assert code == 2 and len(err) == 1, err  # (other stderr lines are the datasets progress bars)
    assert err[0].startswith("envre build: error: the Hub at") and "HTTP 401" in err[0] and "token" in err[0]
    assert TOKEN not in err[0] and "[REDACTED]" in err[0]
    assert (tmp_path / "out" / "data").is_dir() and not hub.commits  # the build is intact, nothing pushed


def test_a_push_whose_commit_is_not_the_repo_head_fails(folder):
    from types import SimpleNamespace

    from envre_hf.hub_calls import push_folder

    class Api:  # upload_folder "succeeds", but the Hub's head is another commit (or none came back)
        endpoint = "http://127.0.0.1:9"

        def __init__(self, oid):
            self.oid = oid

        def create_repo(self, *a, **k):
            pass

        def upload_folder(self, **k):
            return SimpleNamespace(oid=self.oid, commit_url="u")

        def repo_info(self, *a, **k):
            return SimpleNamespace(sha="0" * 40)

        def list_repo_files(self, *a, revision=None, **k):
            assert revision == "0" * 40  # the files of the reported commit
            return ["README.md", "data/test-00000-of-00001.parquet"]

    with pytest.raises(HubError, match="reported commit abc but the repository's head is 000"):
        push_folder(Api("abc"), "o/n", "dataset", str(folder), what="x")
    with pytest.raises(HubError, match="reported no commit"):
        push_folder(Api(None), "o/n", "dataset", str(folder), what="x")
    assert push_folder(Api("0" * 40), "o/n", "dataset", str(folder), what="x").oid == "0" * 40
    (folder / "data" / "test-00000-of-00002.parquet").write_bytes(b"PAR1 another")
    with pytest.raises(HubError, match=r"commit 0+ lacks 1 of the folder's 3 files \('data/test-00000-of-00002"):
        push_folder(Api("0" * 40), "o/n", "dataset", str(folder), what="x")


def test_cli_push_whose_commit_reply_trickles_its_headers_is_one_line_exit_2(hub, tmp_path, redocred_test_path,
                                                                             monkeypatch, capsys):
    """The commit's status line and headers come a byte every 0.3 s, each read within the 1 s read timeout, on the
    connection create and preupload used before (a reused one): the 2 s reply deadline ends it."""
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    small = tmp_path / "test_revised.json"
    small.write_text(json.dumps(json.loads(redocred_test_path.read_text())[:3]))
    hub.faults["commit"] = [("trickle_headers", 0.3)]  # ~70 bytes: 21 s
    start = time.monotonic()
    code = main(["build", "--input", str(small), "--kb", "corpus", "--kb-pool", str(small), "--copies", "1",
                 "--no-progress", "--output", str(tmp_path / "out"), "--push-to-hub", "envre/t"])
    elapsed = time.monotonic() - start
    err = [line for line in capsys.readouterr().err.strip().splitlines() if line.startswith("envre")]
    assert code == 2 and len(err) == 1, err
    assert err[0].startswith("envre build: error: push of ") and "dataset repo envre/t" in err[0]
    commit = f"POST {hub.endpoint}/api/datasets/envre/t/commit/main"
    assert f"{commit}: the reply's headers did not arrive within 2 s" in err[0]
    assert elapsed < 15 and not hub.commits and (tmp_path / "out" / "data").is_dir()


def test_a_hub_answering_every_reply_late_still_confirms_the_commit_it_applied(hub, folder):
    """Every reply 0.4 s late (the work done, the answer late), within the bounds: the push reports the commit the
    Hub applied, its head, holding every file of the plan; the push made exactly one commit."""
    from envre_hf.renaming.hub_upload import upload_plan

    hub.late = {"": 0.4}
    info = push_to_hub(folder, "envre/t", token=TOKEN)
    assert len(hub.commits) == 1 and info.oid == hub.shas[("dataset", "envre/t")]
    assert sorted(hub.files[("dataset", "envre/t")]) == upload_plan(folder, "envre/t").files


def test_a_push_the_hub_takes_only_in_part_fails_and_an_unchanged_one_is_confirmed_by_its_files(hub, folder):
    """A .gitignore in the repository makes the Hub skip the data: the commit lacks them, exit 2 (never a success
    without the data). A push of files the Hub already holds makes no commit: it is confirmed by its files."""
    hub.gitignore = ["*.parquet"]
    lacks = r"lacks 1 of the folder's 2 files \('data/test-00000-of-00001.parquet'.*\.gitignore"
    with pytest.raises(HubError, match=lacks):
        push_to_hub(folder, "envre/t", token=TOKEN)
    assert len(hub.commits) == 1 and sorted(hub.files[("dataset", "envre/t")]) == ["README.md"]
    hub.gitignore = []
    first = push_to_hub(folder, "envre/t", token=TOKEN)
    again = push_to_hub(folder, "envre/t", token=TOKEN)  # nothing changed: huggingface_hub commits nothing
    assert len(hub.commits) == 2 and again.oid == first.oid == hub.shas[("dataset", "envre/t")]


def test_a_rebuild_with_fewer_shards_leaves_no_stale_shard_on_the_hub(hub, folder):
    """Two shards pushed, then a rebuild into one (and no failures left): the Hub keeps only the new files, as the
    folder does; a file of a split the folder does not build stays."""
    data = folder / "data"
    (data / "test-00000-of-00001.parquet").unlink()
    for name in ("test-00000-of-00002.parquet", "test-00001-of-00002.parquet", "seed0/test-00000-of-00002.parquet",
                 "validation-00000-of-00001.parquet"):
        (data / name).parent.mkdir(exist_ok=True)
        (data / name).write_bytes(b"PAR1 " + name.encode())
    (folder / "errors").mkdir()
    (folder / "errors" / "test.jsonl").write_text("{}\n")
    (folder / "statistics.json").write_text(json.dumps({"test": {"data_files": []}}))
    push_to_hub(folder, "envre/t", token=TOKEN)
    for stale in ("test-00000-of-00002.parquet", "test-00001-of-00002.parquet", "seed0/test-00000-of-00002.parquet",
                  "validation-00000-of-00001.parquet"):  # (validation: not a split of this folder's statistics)
        (data / stale).unlink()
    (data / "test-00000-of-00001.parquet").write_bytes(b"PAR1 rebuilt")
    (data / "seed0" / "test-00000-of-00001.parquet").write_bytes(b"PAR1 rebuilt seed0")
    (folder / "errors" / "test.jsonl").unlink()
    info = push_to_hub(folder, "envre/t", token=TOKEN)
    assert sorted(hub.files[("dataset", "envre/t")]) == ["README.md", "data/seed0/test-00000-of-00001.parquet",
                                                         "data/test-00000-of-00001.parquet",
                                                         "data/validation-00000-of-00001.parquet", "statistics.json"]
    assert info.oid == hub.shas[("dataset", "envre/t")] and len(hub.commits) == 2
