"""Building renamed benchmark folders: the same build again after a crash or a kill, error report, load_dataset round trip, card,
determinism, name exclusion, export, the Hub upload (against a local mock of the Hub HTTP API), the CLI."""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from _renaming_fakes import SEEDS, FakePipeline
from _renaming_fakes import build_with as _build
from hub_standin import LocalHub

from envre_hf.documents import DocumentError, dataset_to_documents, read_documents, to_docred
from envre_hf.renaming.builder import BuildConfig, build_split
from envre_hf.renaming.hub_upload import push_to_hub, upload_plan
from envre_hf.renaming.isolation import load_excluded_names

N_DOCS = 30


@pytest.fixture(scope="module")
def small_input(tmp_path_factory, redocred_test_path) -> Path:
    raw = json.loads(redocred_test_path.read_text(encoding="utf-8"))[:N_DOCS]
    path = tmp_path_factory.mktemp("input") / "test_revised.json"
    path.write_text(json.dumps(raw), encoding="utf-8")
    return path


def _parquet_bytes(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((out / "data").glob("*.parquet"))}


@pytest.fixture(scope="module")
def reference(small_input, tmp_path_factory):
    out = tmp_path_factory.mktemp("reference") / "ds"
    result = _build(FakePipeline(), small_input, out)
    return out, result


def test_folder_is_a_loadable_dataset_that_round_trips(reference, small_input):
    from datasets import load_dataset

    out, result = reference
    assert result.statistics["renamed_documents"] == N_DOCS * len(SEEDS)
    ds = load_dataset(str(out))
    assert list(ds) == ["test"]
    docs = dataset_to_documents(ds["test"])
    source = read_documents(small_input)
    expected = [FakePipeline().rename(doc, seed) for doc in source for seed in SEEDS]
    assert docs == expected  # input order, document by document, one row per seed
    assert [d.doc_id for d in docs[:2]] == [f"{source[0].title}#0", f"{source[0].title}#1"]


def test_each_seed_and_the_original_load_as_configs(reference, small_input):
    """``load_dataset(folder, "seed0")``: seed 0's copies in input order; ``"original"``: the unrenamed input;
    ``original_doc_id`` joins them (the original's title)."""
    from datasets import load_dataset

    out, _ = reference
    source = read_documents(small_input)
    for seed in SEEDS:
        ds = load_dataset(str(out), f"seed{seed}")
        assert list(ds) == ["test"] and set(ds["test"]["seed"]) == {seed}
        assert ds["test"]["original_doc_id"] == [doc.title for doc in source]
        assert dataset_to_documents(ds["test"]) == [FakePipeline().rename(doc, seed) for doc in source]
    original = load_dataset(str(out), "original")["test"]
    assert dataset_to_documents(original) == source
    assert original["original_doc_id"] == [doc.title for doc in source] and set(original["seed"]) == {None}
    every = load_dataset(str(out))["test"]
    assert every["original_doc_id"] == [doc.title for doc in source for _ in SEEDS]


def test_card_yaml_lists_configs_features_and_statistics(reference):
    out, result = reference
    text = (out / "README.md").read_text(encoding="utf-8")
    header = yaml.safe_load(text.split("---\n")[1])
    configs = {c["config_name"]: c["data_files"] for c in header["configs"]}
    assert configs == {
        "default": [{"split": "test", "path": "data/test-*"}],
        **{f"seed{s}": [{"split": "test", "path": f"data/seed{s}/test-*"}] for s in SEEDS},
        "original": [{"split": "test", "path": "data/original/test-*"}],
    }
    rows = {info["config_name"]: info["splits"][0]["num_examples"] for info in header["dataset_info"]}
    assert rows == {"default": N_DOCS * len(SEEDS), "original": N_DOCS, **{f"seed{s}": N_DOCS for s in SEEDS}}
    header["dataset_info"] = next(info for info in header["dataset_info"] if info["config_name"] == "default")
    names = [f["name"] for f in header["dataset_info"]["features"]]
    assert names[:4] == ["doc_id", "title", "sents", "vertexSet"] and "substitutions" in names
    assert header["dataset_info"]["splits"][0]["num_examples"] == N_DOCS * len(SEEDS)
    assert header["license"] == "mit" and header["pretty_name"] and header["task_categories"]
    rates = result.statistics["substitution_rates"]
    assert f"| ALL | {rates['ALL']['entities']} | {rates['ALL']['substituted']} |" in text
    # per type: the fake renames PER/ORG/LOC with exact types and leaves the rest (no rule-made values)
    by_type = json.loads((out / "statistics.json").read_text())["test"]["type_matches_by_type"]
    assert by_type == result.statistics["type_matches_by_type"] and set(by_type) >= {"PER", "ORG", "LOC", "NUM"}
    per = rates["PER"]["substituted"]
    assert by_type["PER"] == {"exact": per, "relaxed": 0, "rule": 0, "unchanged": 0}
    assert by_type["NUM"]["exact"] == 0 and by_type["NUM"]["unchanged"] == rates["NUM"]["entities"]
    assert f"| PER | {per} | {per} | 100.0% | {per} | 0 | 0 |" in text and "| exact type | relaxed type | rule-made |" in text
    assert "fake-1" in text and "## Citation" in text and "load_dataset(" in text
    assert json.loads((out / "statistics.json").read_text())["test"]["seeds"] == list(SEEDS)
    from datasets import Features

    from envre_hf.documents import DOCUMENT_FEATURES

    assert Features._from_yaml_list(header["dataset_info"]["features"]) == DOCUMENT_FEATURES


def test_two_builds_are_byte_identical(reference, small_input, tmp_path):
    out, _ = reference
    _build(FakePipeline(), small_input, tmp_path / "again")
    assert _parquet_bytes(tmp_path / "again") == _parquet_bytes(out)
    assert (tmp_path / "again" / "README.md").read_text() == (out / "README.md").read_text()


def test_a_build_that_crashed_run_again_equals_an_uninterrupted_build(reference, small_input, tmp_path):
    out = tmp_path / "ds"
    with pytest.raises(RuntimeError, match="simulated crash"):
        _build(FakePipeline(crash_after=17), small_input, out)
    assert [p.name for p in out.iterdir()] == [".envre-build"]  # nothing is written before every unit is renamed
    _build(FakePipeline(), small_input, out)
    assert _parquet_bytes(out) == _parquet_bytes(reference[0])
    assert (out / "README.md").read_bytes() == (reference[0] / "README.md").read_bytes()


_KILLED_BUILD = """
import sys
sys.path.insert(0, {tests!r})
from _renaming_fakes import FakePipeline, build_with
build_with(FakePipeline(delay=0.1), {input!r}, {out!r})
"""


def test_a_build_killed_while_renaming_run_again_equals_an_uninterrupted_build(reference, small_input, tmp_path):
    out = tmp_path / "ds"
    script = _KILLED_BUILD.format(tests=str(Path(__file__).resolve().parents[1]), input=str(small_input), out=str(out))
    proc = subprocess.Popen([sys.executable, "-c", script])
    deadline = time.time() + 60
    while time.time() < deadline and not (out / ".envre-build").exists():
        time.sleep(0.05)
    time.sleep(1.0)  # renaming (60 units of 0.1 s)
    os.kill(proc.pid, signal.SIGKILL)
    assert proc.wait() == -signal.SIGKILL
    assert not (out / "data").exists()
    _build(FakePipeline(), small_input, out)
    assert _parquet_bytes(out) == _parquet_bytes(reference[0])


def test_on_error_skip_lists_every_bad_document_with_its_reason(small_input, tmp_path):
    raw = json.loads(small_input.read_text())[:6]
    del raw[1]["vertexSet"]  # cannot be parsed
    raw[3]["vertexSet"][0][0]["sent_id"] = 999  # parses, but the pipeline rejects it
    bad = tmp_path / "test_bad.json"
    bad.write_text(json.dumps(raw))
    with pytest.raises(DocumentError, match="document 1"):
        _build(FakePipeline(), bad, tmp_path / "fail")
    result = _build(FakePipeline(), bad, tmp_path / "skip", on_error="skip")
    errors = [json.loads(line) for line in (tmp_path / "skip" / "errors" / "test.jsonl").read_text().splitlines()]
    assert [(e["doc_index"], e["seed"]) for e in errors] == [(1, None), (3, 0), (3, 1)]
    assert errors[0]["title"] == raw[1]["title"] and "vertexSet" in errors[0]["error"]
    assert "sent_id" in errors[1]["error"] and errors[1]["title"] == raw[3]["title"]
    stats = result.statistics
    assert stats["renamed_documents"] == 4 * len(SEEDS) and stats["failed"] == 3 and stats["failed_documents"] == 2
    # nothing silently dropped: every input document is renamed or listed
    from datasets import load_dataset

    renamed = {d.orig_title for d in dataset_to_documents(load_dataset(str(tmp_path / "skip"))["test"])}
    assert renamed | {e["title"] for e in errors} == {d["title"] for d in raw}


def test_export_json_and_names_used(small_input, tmp_path):
    out = tmp_path / "ds"
    result = _build(FakePipeline(), small_input, out, export_json=True)
    exported = json.loads((out / "json" / "test.json").read_text())
    assert len(exported) == N_DOCS * len(SEEDS)
    first = exported[0]
    assert {"doc_id", "orig_title", "seed", "substitutions", "vertexSet", "labels"} <= set(first)
    names = json.loads((out / "names_used.json").read_text())
    assert len(names["splits"]["test"]) == result.statistics["names_used"] > 0
    assert load_excluded_names(out) == set(names["splits"]["test"])
    assert "Zq" in next(iter(load_excluded_names(out / "names_used.json")))
    from_docred = load_excluded_names(small_input)
    assert to_docred(read_documents(small_input)[0])["vertexSet"][0][0]["name"] in from_docred


def test_second_split_joins_the_same_folder(small_input, tmp_path):
    from datasets import load_dataset

    out = tmp_path / "ds"
    _build(FakePipeline(), small_input, out)
    _build(FakePipeline(), small_input, out, split="validation", seeds=(7,))
    ds = load_dataset(str(out))
    assert sorted(ds) == ["test", "validation"]
    assert len(ds["validation"]) == N_DOCS and set(ds["validation"]["seed"]) == {7}
    header = yaml.safe_load((out / "README.md").read_text().split("---\n")[1])
    assert [f["split"] for f in header["configs"][0]["data_files"]] == ["test", "validation"]
    configs = {c["config_name"]: [f["split"] for f in c["data_files"]] for c in header["configs"]}
    assert configs["seed7"] == ["validation"] and configs["seed0"] == ["test"]
    assert configs["original"] == ["test", "validation"]
    assert sorted(load_dataset(str(out), "seed7")) == ["validation"]
    # the test split again with one seed: seed 1's shard of it goes, and so does its config
    _build(FakePipeline(), small_input, out, seeds=(0,), overwrite=True)
    assert not (out / "data" / "seed1" / "test-00000-of-00001.parquet").exists()
    header = yaml.safe_load((out / "README.md").read_text().split("---\n")[1])
    assert "seed1" not in {c["config_name"] for c in header["configs"]}


# --------------------------------------------------------------------------- Hub upload


# The Hub stand-in (create, validate, preupload, commit, then info / tree / paths-info / resolve) lives in
# hub_standin.py, shared with the tests that read back what was pushed (test_hub.py).
_MockHub = LocalHub


def test_push_to_hub_uploads_exactly_the_planned_files(reference, tmp_path, monkeypatch):
    out, _ = reference
    (out / ".build").mkdir()
    (out / ".build" / ".test.x1.tmp").write_text("")  # what a killed build left never leaves the machine
    hub = _MockHub()
    try:
        monkeypatch.setenv("HF_ENDPOINT", hub.endpoint)
        monkeypatch.setenv("HF_HUB_DISABLE_PROGRESS_BARS", "1")
        info = push_to_hub(out, "envre/env_redocred", token="hf_test_token")
    finally:
        hub.server.shutdown()
        (out / ".build" / ".test.x1.tmp").unlink()
        (out / ".build").rmdir()
    plan = upload_plan(out, "envre/env_redocred")
    assert plan.repo_type == "dataset"
    shards = ["data/original/test-00000-of-00001.parquet", *(f"data/seed{s}/test-00000-of-00001.parquet" for s in SEEDS),
              "data/test-00000-of-00001.parquet"]
    assert plan.files == ["README.md", *shards, "names_used.json", "statistics.json"]
    assert hub.repos == [{"name": "env_redocred", "organization": "envre", "visibility": "public", "type": "dataset"}]
    assert all(a == "Bearer hf_test_token" for a in hub.auth)
    [(path, lines)] = hub.commits
    assert path == "/api/datasets/envre/env_redocred/commit/main"
    uploaded = {line["value"]["path"]: base64.b64decode(line["value"]["content"]) for line in lines if line["key"] == "file"}
    assert sorted(uploaded) == plan.files
    assert all(uploaded[f] == (out / f).read_bytes() for f in plan.files)
    assert hub.validated and hub.validated[0]["repoType"] == "dataset"
    assert "envre/env_redocred" in str(info)


# --------------------------------------------------------------------------- real pipeline + CLI


@pytest.fixture(scope="module")
def corpus_kb(redocred_dev):
    corpus = pytest.importorskip("envre_hf.kb.corpus", reason="CorpusKB (helper RENAME) not written yet")
    return corpus.CorpusKB(redocred_dev)


def test_real_pipeline_build_respects_excluded_names(corpus_kb, small_input, tmp_path):
    from envre_hf.renaming.pipeline import RenamingConfig, RenamingPipeline

    first = build_split(
        RenamingPipeline(corpus_kb),
        small_input,
        BuildConfig(tmp_path / "a", seeds=SEEDS, progress=False),
        kb_name=corpus_kb.name,
        kb_snapshot=corpus_kb.snapshot_id(),
    )
    used = load_excluded_names(tmp_path / "a")
    assert used and first.statistics["substitution_rates"]["ALL"]["substituted"] > 0
    config = RenamingConfig(exclude_names=frozenset(used))
    second = build_split(
        RenamingPipeline(corpus_kb, config),
        small_input,
        BuildConfig(tmp_path / "b", seeds=SEEDS, progress=False),
        kb_name=corpus_kb.name,
        kb_snapshot=corpus_kb.snapshot_id(),
        renaming_config=config,
    )
    from datasets import load_dataset

    def kb_names(folder):  # rule-made NUM/TIME values are exempt (RenamingConfig.exclude_values=False)
        docs = dataset_to_documents(load_dataset(str(folder))["test"])
        return {s.new_name for d in docs for s in d.substitutions if s.match == "exact" or s.match.startswith("relaxed")}

    assert kb_names(tmp_path / "a") and not used & kb_names(tmp_path / "b")
    assert second.statistics["renaming_config"]["exclude_names"]["count"] == len(used)


def test_cli_builds_prints_statistics_and_rebuilds_identically(corpus_kb, small_input, redocred_dev_path, tmp_path, capsys):
    from envre_hf.cli.main import main

    pool = tmp_path / "pool.json"
    pool.write_text(json.dumps(json.loads(redocred_dev_path.read_text())[:100]))
    args = ["build", "--input", str(small_input), "--kb", "corpus", "--kb-pool", str(pool), "--copies", "2",
            "--output", str(tmp_path / "cli"), "--no-progress", "--export-json"]
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert "| ALL |" in printed and "renamed documents" in printed and "Leaks" in printed
    first = _parquet_bytes(tmp_path / "cli")
    assert (tmp_path / "cli" / "json" / "test.json").exists()
    assert main(args) == 0  # the same build again: the same bytes
    assert _parquet_bytes(tmp_path / "cli") == first
    assert main(args[:-2] + ["--num-proc", "2", "--output", str(tmp_path / "cli2")]) == 0
    assert _parquet_bytes(tmp_path / "cli2") == first


def test_cli_excludes_names_and_pushes_to_hub(corpus_kb, small_input, redocred_dev_path, tmp_path, monkeypatch):
    from datasets import load_dataset

    from envre_hf.cli.main import main

    pool = tmp_path / "pool.json"
    pool.write_text(json.dumps(json.loads(redocred_dev_path.read_text())[:100]))
    args = ["build", "--input", str(small_input), "--kb", "corpus", "--kb-pool", str(pool), "--copies", "2",
            "--no-progress"]
    assert main(args + ["--output", str(tmp_path / "a")]) == 0
    hub = _MockHub()
    monkeypatch.setenv("HF_ENDPOINT", hub.endpoint)
    monkeypatch.setenv("HF_TOKEN", "hf_env_token")
    monkeypatch.setenv("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    try:
        assert main(args + ["--output", str(tmp_path / "b"), "--exclude-names-from", str(tmp_path / "a"),
                            "--push-to-hub", "envre/env_redocred_isolated"]) == 0
    finally:
        hub.server.shutdown()

    def kb_names(folder):
        docs = dataset_to_documents(load_dataset(str(folder))["test"])
        return {s.new_name for d in docs for s in d.substitutions if s.match == "exact" or s.match.startswith("relaxed")}

    assert kb_names(tmp_path / "a") and not kb_names(tmp_path / "a") & kb_names(tmp_path / "b")
    assert hub.repos[0]["name"] == "env_redocred_isolated" and set(hub.auth) == {"Bearer hf_env_token"}
    [(path, lines)] = hub.commits
    uploaded = sorted(line["value"]["path"] for line in lines if line["key"] == "file")
    assert path.endswith("/env_redocred_isolated/commit/main") and uploaded == upload_plan(tmp_path / "b", "x").files


@pytest.fixture(scope="module")
def synthetic_doc_file(tmp_path_factory) -> Path:
    """A document whose entities are named like items of the synthetic Wikidata (seed 3)."""
    sents = [
        ["Sasudaia", "borders", "Zedelmaria", "."],
        ["The", "University", "of", "Gaga", "opened", "in", "1990", "."],
        ["Sasudaia", "funds", "it", "."],
    ]
    doc = {
        "title": "Synthetic",
        "vertexSet": [
            [{"name": "Sasudaia", "pos": [0, 1], "sent_id": 0, "type": "LOC"},
             {"name": "Sasudaia", "pos": [0, 1], "sent_id": 2, "type": "LOC"}],
            [{"name": "Zedelmaria", "pos": [2, 3], "sent_id": 0, "type": "LOC"}],
            [{"name": "University of Gaga", "pos": [1, 4], "sent_id": 1, "type": "ORG"}],
            [{"name": "1990", "pos": [6, 7], "sent_id": 1, "type": "TIME"}],
        ],
        "labels": [{"r": "P17", "h": 2, "t": 0, "evidence": [1, 2]}],
        "sents": sents,
    }
    path = tmp_path_factory.mktemp("synthetic") / "test_synthetic.json"
    path.write_text(json.dumps([doc]), encoding="utf-8")
    return path


def _cli_statistics(out: Path) -> dict:
    return json.loads((out / "statistics.json").read_text())["test"]


def test_cli_wikidata_mirror_and_dump_index(synthetic_doc_file, tmp_path, monkeypatch):
    from kb_fixtures.fake_wikidata import FakeWikidata

    from envre_hf.cli.main import main
    from kb_fixtures.synthetic import synthetic_entities, write_synthetic_dump
    from envre_hf.kb.wikidata_dump import index_dump

    monkeypatch.setenv("ENVRE_USER_AGENT", "envre-hf-tests/0.1 (https://example.org; tests@example.org)")
    common = ["build", "--input", str(synthetic_doc_file), "--copies", "2", "--no-progress"]
    with FakeWikidata(list(synthetic_entities(300, seed=3))) as server:
        args = common + ["--kb", "wikidata", "--kb-cache", str(tmp_path / "cache"), "--output", str(tmp_path / "http"),
                         "--wikidata-api-url", server.api_url, "--wikidata-sparql-url", server.sparql_url]
        assert main(args) == 0
    stats = _cli_statistics(tmp_path / "http")
    assert server.api_url in stats["kb"]["snapshot"] and stats["kb"]["name"].endswith("wikidata-http")
    assert stats["substitution_rates"]["LOC"]["substituted"] == 4  # both countries, both seeds
    write_synthetic_dump(tmp_path / "dump.json.gz", 300, seed=3)
    index_dump(tmp_path / "dump.json.gz", tmp_path / "index.sqlite")
    assert main(common + ["--kb", "dump", "--kb-index", str(tmp_path / "index.sqlite"), "--output",
                          str(tmp_path / "dump")]) == 0
    stats = _cli_statistics(tmp_path / "dump")
    assert "dump" in stats["kb"]["snapshot"] and stats["substitution_rates"]["LOC"]["substituted"] == 4


def test_cli_wikidata_outage_midway_then_rerun_is_byte_identical(synthetic_doc_file, tmp_path, monkeypatch, capsys):
    """The API down for good midway: one line, exit 2; once it is back the same build gives the uninterrupted bytes."""
    from kb_fixtures.fake_wikidata import FakeWikidata
    from kb_fixtures.synthetic import synthetic_entities

    from envre_hf.cli.main import main

    monkeypatch.setenv("ENVRE_USER_AGENT", "envre-hf-tests/0.1 (https://example.org; tests@example.org)")
    monkeypatch.setenv("ENVRE_MAX_RETRIES", "0")
    common = ["build", "--input", str(synthetic_doc_file), "--copies", "2", "--no-progress", "--kb", "wikidata"]
    with FakeWikidata(list(synthetic_entities(300, seed=3))) as server:
        urls = ["--wikidata-api-url", server.api_url, "--wikidata-sparql-url", server.sparql_url]
        assert main(common + urls + ["--kb-cache", str(tmp_path / "c1"), "--output", str(tmp_path / "whole")]) == 0
        server.inject("sparql", *["500"] * 50)  # linking and entity data answer; the candidate queries fail
        capsys.readouterr()
        args = common + urls + ["--kb-cache", str(tmp_path / "c2"), "--output", str(tmp_path / "cut")]
        assert main(args) == 2
        err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("envre")]
        assert len(err) == 1 and server.sparql_url in err[0] and "run the same build again" in err[0]
        server.faults.clear()
        assert main(args) == 0
    for name in ("statistics.json", "names_used.json", "README.md"):
        whole = (tmp_path / "whole" / name).read_text().replace(str(tmp_path / "c1"), "")
        assert whole == (tmp_path / "cut" / name).read_text().replace(str(tmp_path / "c2"), ""), name
    assert _parquet_bytes(tmp_path / "whole") == _parquet_bytes(tmp_path / "cut")


def _synthetic_documents(n_docs: int) -> list[dict]:
    """``n_docs`` documents of three entities each, named like items of the synthetic Wikidata (seed 3)."""
    from kb_fixtures.synthetic import synthetic_entities

    kinds = {"Q6256": "LOC", "Q515": "LOC", "Q5": "PER", "Q4830453": "ORG", "Q3918": "ORG"}
    named = []
    for e in synthetic_entities(300, seed=3):
        label = e.get("labels", {}).get("en", {}).get("value")
        p31 = e.get("claims", {}).get("P31")
        kind = kinds.get(p31[-1]["mainsnak"]["datavalue"]["value"]["id"]) if p31 and e["type"] == "item" else None
        if label and kind:
            named.append((label, kind))
    docs = []
    for d in range(n_docs):
        sents, vertex_set = [], []
        for name, kind in named[3 * d: 3 * d + 3]:
            vertex_set.append([{"name": name, "pos": [0, len(name.split())], "sent_id": len(sents), "type": kind}])
            sents.append(name.split() + ["is", "here", "."])
        docs.append({"title": f"Doc {d}", "vertexSet": vertex_set, "sents": sents,
                     "labels": [{"r": "P17", "h": 0, "t": 1, "evidence": [0]}]})
    return docs


def _folder_bytes(out: Path) -> dict[str, bytes]:
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


def test_cli_wikidata_down_for_good_midway_then_restarted_resumes_to_the_uninterrupted_bytes(tmp_path, monkeypatch,
                                                                                            capsys):
    """Issue 27, case 6: after some documents the API drops every request (down for good): one line, exit 2, the
    folder as it was. What was renamed is kept as the replies it needed (the reply cache): once the API is back
    (restarted on the same port), the same build asks only what was never answered and writes, file for file,
    the bytes of an uninterrupted build."""
    from kb_fixtures.fake_wikidata import FakeWikidata
    from kb_fixtures.synthetic import synthetic_entities

    from envre_hf.cli.main import main

    monkeypatch.setenv("ENVRE_USER_AGENT", "envre-hf-tests/0.1 (https://example.org; tests@example.org)")
    monkeypatch.setenv("ENVRE_MAX_RETRIES", "0")  # (retries are bounded elsewhere: tests/http/test_bounds.py)
    entities = list(synthetic_entities(300, seed=3))
    source = tmp_path / "test_synthetic.json"
    source.write_text(json.dumps(_synthetic_documents(4)), encoding="utf-8")
    common = ["build", "--input", str(source), "--copies", "2", "--no-progress", "--kb", "wikidata"]
    with FakeWikidata(entities) as server:
        port = server.base_url.rsplit(":", 1)[1]
        urls = ["--wikidata-api-url", server.api_url, "--wikidata-sparql-url", server.sparql_url]
        assert main(common + urls + ["--kb-cache", str(tmp_path / "c1"), "--output", str(tmp_path / "whole")]) == 0
        needed = len(server.requests)
    args = common + urls + ["--kb-cache", str(tmp_path / "c2"), "--output", str(tmp_path / "cut")]
    (tmp_path / "cut").mkdir()
    with FakeWikidata(entities, port=int(port), fail_after=needed // 2) as down:
        capsys.readouterr()
        assert main(args) == 2
        err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("envre")]
        assert len(err) == 1 and "knowledge base failed: document 'Doc " in err[0], err
        assert f"127.0.0.1:{port}" in err[0] and "connection dropped" in err[0] and "run the same build again" in err[0]
        answered = needed // 2
        assert len(down.requests) == answered + 1  # then the first one dropped
    assert sorted(p.name for p in (tmp_path / "cut").iterdir()) == [".envre-build"]  # nothing half-made
    with FakeWikidata(entities, port=int(port)) as back:
        assert main(args) == 0
        assert len(back.requests) == needed - answered  # what was answered before is not asked again
    assert _folder_bytes(tmp_path / "whole") == _folder_bytes(tmp_path / "cut")
