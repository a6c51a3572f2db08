"""The ``document-relation-extraction`` pipeline: its three input kinds, its output, and that it predicts
exactly what ``envre evaluate --model`` predicts (tiny random model, real Re-DocRED test documents)."""

from __future__ import annotations

import json
import re
import shutil

import pytest
from _pipeline_helpers import NER_WORDS, docred_as_text, save_docre_model, save_tiny_ner

pytest.importorskip("spacy")


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return save_docre_model(tmp_path_factory.mktemp("pipeline") / "model")


@pytest.fixture(scope="module")
def pipe(model_dir):
    from transformers import pipeline

    import envre_hf  # noqa: F401  (registers the task: no remote code)

    return pipeline("document-relation-extraction", model=str(model_dir))


@pytest.fixture(scope="module")
def raw_test(redocred_test_path):
    return json.loads(redocred_test_path.read_text())[:6]


def _triples(outputs, titles):
    return {(title, r["h_idx"], r["t_idx"], r["relation"]) for title, out in zip(titles, outputs) for r in out}


def test_a_folder_loads_the_registered_pipeline_and_carries_no_pipeline_code(pipe, model_dir, tmp_path):
    from envre_hf.models.pipeline_docre import DocREPipeline

    assert type(pipe) is DocREPipeline  # the package's class: no remote code ran
    config = json.loads((model_dir / "config.json").read_text())
    assert "custom_pipelines" not in config and not (model_dir / "pipeline_docre.py").exists()
    assert config["relation_names"]["P17"] == "country"
    pipe.save_pretrained(tmp_path / "again")
    assert "custom_pipelines" not in json.loads((tmp_path / "again" / "config.json").read_text())
    assert not (tmp_path / "again" / "pipeline_docre.py").exists()  # transformers' own save would copy the module


def test_a_checkpoint_naming_its_own_pipeline_code_gets_envre_hfs_and_runs_none(pipe, model_dir, tmp_path):
    """Checkpoints of earlier releases name a ``pipeline_docre.py`` in ``custom_pipelines``: the registered task
    serves them, and that file never runs (it would write a marker)."""
    from transformers import pipeline

    from envre_hf.models.pipeline_docre import DocREPipeline

    old = tmp_path / "old"
    shutil.copytree(model_dir, old)
    config = json.loads((old / "config.json").read_text())
    config["custom_pipelines"] = {"document-relation-extraction": {"impl": "pipeline_docre.DocREPipeline",
                                                                    "pt": ["AutoModel"], "type": "text"}}
    (old / "config.json").write_text(json.dumps(config))
    marker = tmp_path / "ran"
    (old / "pipeline_docre.py").write_text(f"open({str(marker)!r}, 'w').close()\nDocREPipeline = None\n")
    loaded = pipeline("document-relation-extraction", model=str(old))
    assert type(loaded) is DocREPipeline and not marker.exists()


def test_docred_dicts_give_the_predictions_of_envre_evaluate_model(pipe, model_dir, raw_test, tmp_path, capsys):
    from envre_hf.cli.main import main

    gold = tmp_path / "gold.json"
    gold.write_text(json.dumps(raw_test))
    saved = tmp_path / "preds.json"
    assert main(["evaluate", "--model", str(model_dir), "--gold", str(gold), "--save-predictions", str(saved),
                 "--batch-size", "4", "--device", "cpu"]) == 0
    capsys.readouterr()
    expected = {(p["title"], p["h_idx"], p["t_idx"], p["r"]) for p in json.loads(saved.read_text())}
    outputs = pipe(raw_test, batch_size=4)
    assert len(outputs) == len(raw_test) and expected
    assert _triples(outputs, [d["title"] for d in raw_test]) == expected


def test_text_with_gold_spans_gives_the_same_triples_as_the_docred_document(pipe, raw_test):
    texts = [docred_as_text(d) for d in raw_test]
    as_text, as_docred = pipe(texts, batch_size=3), pipe(raw_test, batch_size=3)
    titles = [d["title"] for d in raw_test]
    assert _triples(as_text, titles) == _triples(as_docred, titles)
    first = as_text[0][0]
    assert first["head"]["mentions"] == texts[0]["entities"][first["h_idx"]]["mentions"]
    assert all(texts[0]["text"][s:e] in first["head"]["name"] or first["head"]["name"] in texts[0]["text"]
               for s, e in first["head"]["mentions"])


def test_output_is_sorted_with_names_scores_and_the_options_apply(pipe, raw_test):
    doc = raw_test[1]
    out = pipe(doc)
    assert out and all(set(r) == {"head", "tail", "h_idx", "t_idx", "relation", "relation_name", "score", "evidence"}
                       for r in out)
    keys = [(-r["score"], r["h_idx"], r["t_idx"]) for r in out]
    assert keys == sorted(keys) and all(0.5 < r["score"] < 1 for r in out)
    assert {r["relation_name"] for r in out if r["relation"] == "P17"} <= {"country"}
    uncapped, lower = pipe(doc, top_k=0), pipe(doc, threshold=0.45, top_k=0)
    triples = [{(r["h_idx"], r["t_idx"], r["relation"]) for r in o} for o in (out, uncapped, lower)]
    assert triples[0] < triples[1] < triples[2]
    assert all(r["score"] > 0.45 for r in lower) and any(r["score"] < 0.5 for r in lower)
    one = pipe(doc, top_k=1)
    pairs = [(r["h_idx"], r["t_idx"]) for r in one]
    assert len(pairs) == len(set(pairs)) and set(pairs) == {(r["h_idx"], r["t_idx"]) for r in out}


def test_a_generator_streams_and_a_bad_input_stops_after_the_good_ones(pipe, raw_test):
    read = []

    def stream():
        for i in range(20):
            read.append(i)
            yield raw_test[i % 3]

    outputs = pipe(stream(), batch_size=1)
    assert read == [0] and not isinstance(outputs, list)  # transformers peeks at the first input, no more
    next(outputs)
    assert len(read) == 16  # one buffer of 16 x batch_size documents, not the whole stream
    assert len(list(outputs)) == 19 and len(read) == 20
    bad = {"text": "Obama met Clinton.", "entities": [{"mentions": [[0, 5]], "type": "PER"},
                                                   {"mentions": [[10, 99]], "type": "PER"}]}
    got = []
    with pytest.raises(ValueError, match=r"document 2 entity 1 mention 0 field 'mentions': span \[10, 99\] is outside"):
        for out in pipe(iter([raw_test[0], raw_test[1], bad, raw_test[2]])):
            got.append(out)
    assert len(got) == 2


def test_character_offsets_survive_unicode_and_runs_of_whitespace():
    from envre_hf.documents.text import text_document

    text = "  Zoë\u00a0Saldaña  met\t\tJosé-Luis in São\u00a0Paulo,\n\n\nBrazil 🇧🇷 — U.S.-based firms. Zoë left."
    spans = {"Zoë\u00a0Saldaña": "PER", "José": "PER", "São\u00a0Paulo": "LOC", "Brazil": "LOC", "U.S.": "LOC"}
    entities = [[(text.index(name), text.index(name) + len(name))] for name in spans]
    entities[0].append((text.rindex("Zoë"), text.rindex("Zoë") + 3))
    doc = text_document(text, entities, list(spans.values()))
    for entity, given in zip(doc.entities, entities):
        for mention, (s, e) in zip(entity.mentions, given):
            assert mention.name == text[s:e]
            assert "".join(mention.tokens(doc.sents)) == "".join(text[s:e].split())
    assert all(tok.strip() == tok and tok for sent in doc.sents for tok in sent)
    assert "".join(t for sent in doc.sents for t in sent) == "".join(text.split())


def test_mentions_without_clusters_are_grouped_by_the_alias_rules_or_a_callable(pipe):
    text = "Barack Obama visited the United States. Obama said the U.S. would help."
    names = [("Barack Obama", "PER"), ("United States", "LOC"), ("Obama", "PER"), ("U.S.", "LOC")]
    mentions = [{"span": [text.index(n), text.index(n) + len(n)], "type": t} for n, t in names]
    from envre_hf.models.pipeline_docre import prepare

    grouped = prepare({"text": text, "mentions": mentions})
    assert grouped.spans == [[mentions[0]["span"], mentions[2]["span"]], [mentions[1]["span"], mentions[3]["span"]]]
    exact = prepare({"text": text, "mentions": mentions}, cluster="exact")
    assert len(exact.spans) == 4
    alone = prepare({"text": text, "mentions": mentions}, cluster=lambda text, found: [[i] for i in range(len(found))])
    assert len(alone.spans) == 4
    with pytest.raises(ValueError, match="each index once"):
        prepare({"text": text, "mentions": mentions}, cluster=lambda text, found: [[0, 1]])
    out = pipe({"text": text, "mentions": mentions}, threshold=0.4)
    assert out and {r["head"]["name"] for r in out} <= {"Barack Obama", "United States"}


def test_raw_text_with_a_token_classification_model(pipe, tmp_path):
    ner = str(save_tiny_ner(tmp_path / "ner"))
    from envre_hf.models.pipeline_docre import NERTagger, prepare

    text = "Obama visited Paris in March 2010.\n\nLater  Obama and Clinton left France with 3,000 people."
    prepared = prepare(text, ner=NERTagger(ner))
    names = [[text[s:e] for s, e in ms] for ms in prepared.spans]
    assert names == [["Obama", "Obama"], ["Paris"], ["March 2010"], ["Clinton"], ["France"], ["3,000"]]
    assert [e.type for e in prepared.document.entities] == ["PER", "LOC", "TIME", "PER", "LOC", "NUM"]
    assert {text[s:e].lower() for ms in prepared.spans for s, e in ms} >= set(NER_WORDS)
    out = pipe(text, ner=ner, threshold=0.3)
    assert out and all(r["head"]["mentions"] in prepared.spans and r["tail"]["mentions"] in prepared.spans for r in out)
    with pytest.raises(ValueError, match="needs an NER model"):
        pipe(text)


def test_a_document_of_2000_words_is_read_in_windows(pipe):
    words = ("Obama visited Paris and then France with Clinton again . " * 200).split()
    assert len(words) == 2000
    text = " ".join(words)
    positions = [m.start() for m in re.finditer(r"Obama|Paris|France|Clinton", text)]
    entities = {}
    for start in positions:
        name = text[start:].split(" ", 1)[0]
        entities.setdefault(name, []).append([start, start + len(name)])
    doc = {"text": text, "entities": [{"mentions": m, "type": "PER" if n in ("Obama", "Clinton") else "LOC"}
                                      for n, m in entities.items()]}
    from envre_hf.features import featurize_document
    from envre_hf.models.pipeline_docre import prepare

    length = len(featurize_document(prepare(doc).document, pipe.tokenizer)["input_ids"])
    assert length > 2 * pipe.model.config.window
    out = pipe(doc, threshold=0.01)  # every pair then has relations (a random model scores about 0.5)
    assert {(r["h_idx"], r["t_idx"]) for r in out} == {(h, t) for h in range(4) for t in range(4) if h != t}


def test_bf16_weights_and_autocast_run(model_dir, raw_test):
    import torch
    from transformers import pipeline

    bf16 = pipeline("document-relation-extraction", model=str(model_dir), dtype=torch.bfloat16, device="cpu")
    assert next(bf16.model.parameters()).dtype == torch.bfloat16
    assert isinstance(bf16(raw_test[0]), list)
    fp32 = pipeline("document-relation-extraction", model=str(model_dir), device="cpu")
    assert isinstance(fp32(raw_test[0], autocast="bf16"), list)


@pytest.mark.parametrize(
    "item, message",
    [
        ({"text": "Obama", "entities": [{"mentions": [[0, 5]], "type": "PERSON"}]}, "entity 0 field 'type': unknown entity type 'PERSON'"),
        ({"text": "Obama", "entities": [{"mentions": [[3, 9]], "type": "PER"}]}, r"entity 0 mention 0 field 'mentions': span \[3, 9\]"),
        ({"text": "Obama", "entities": [{"mentions": [], "type": "PER"}]}, "at least one mention"),
        ({"text": "Obama  x", "mentions": [{"span": [5, 7], "type": "PER"}]}, "holds only whitespace"),
        ({"txt": "Obama"}, "expected 'text'"),
        (42, "expected a document"),
        ({"title": "T", "sents": [["A"]], "vertexSet": [[{"name": "A", "sent_id": 3, "pos": [0, 1], "type": "PER"}]]}, "sent_id"),
    ],
)
def test_bad_inputs_are_one_clear_error(pipe, item, message):
    from envre_hf.documents import DocumentError

    with pytest.raises(DocumentError, match=message):
        pipe(item)
