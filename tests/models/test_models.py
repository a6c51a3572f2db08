"""ATLOP / NCRL and the shared DocRE base, with tiny random encoders and real Re-DocRED documents."""

from __future__ import annotations

import json
import math
import os
from types import SimpleNamespace

import pytest
import torch
from transformers import AutoConfig, AutoModel

from _encoder_reference import eager, full_attention, pool_by_loops
from _training_helpers import minilm_dir, tiny_model

from envre_hf.features import DocRECollator, featurize_document
from envre_hf.models import (
    HEAD_TYPES,
    ATLOPModel,
    DocREConfig,
    DocREModel,
    DocREModelOutput,
    adaptive_thresholding_loss,
    none_class_ranking_loss,
    threshold_decode,
)
from envre_hf.models.encoder import DocREEncoderOutput, Windows, window_plan
from envre_hf.models.modeling_docre import DocREPreTrainedModel
from envre_hf.models.registry import head_class


@pytest.fixture(scope="module")
def small_docs(redocred_dev, tokenizer):
    """The four shortest of the first 200 dev documents with at least three relations (~170 wordpieces)."""
    candidates = [d for d in redocred_dev[:200] if len(d.relations) >= 3]
    lengths = {d.key: len(featurize_document(d, tokenizer)["input_ids"]) for d in candidates}
    return sorted(candidates, key=lambda d: lengths[d.key])[:4]


@pytest.fixture(scope="module")
def batch(small_docs, tokenizer):
    return DocRECollator(tokenizer)([featurize_document(d, tokenizer) for d in small_docs])


#: Encoder positions of the models here: the documents are longer, so the windowed long-input path runs.
POSITIONS = 64


# --------------------------------------------------------------------------- forward, shapes, decoding


@pytest.mark.parametrize("head_type", ["atlop", "ncrl"])
def test_forward_shapes_loss_and_probabilities(tokenizer, batch, head_type):
    model = tiny_model(tokenizer, head_type, max_positions=POSITIONS)
    assert batch["input_ids"].shape[1] > model.config.window  # the long-input path is exercised
    out = model(**batch)
    assert isinstance(out, DocREModelOutput)
    n_pairs = sum(len(h) for h in batch["hts"])
    assert out.logits.shape == (n_pairs, 97)
    assert out.pair_representations.shape == (n_pairs, 32 * 8)
    assert torch.isfinite(out.loss) and out.loss.item() > 0
    out.loss.backward()
    grads = [p.grad for p in model.encoder.transformer.parameters() if p.grad is not None]
    assert grads and any(g.abs().sum() > 0 for g in grads)
    probs = model.relation_probabilities(out.logits.detach())
    assert probs.shape == (n_pairs, 96) and bool(((probs > 0) & (probs < 1)).all())
    decoded = model.decode(out.logits.detach(), top_k=0)  # 0: no cap
    assert torch.equal(decoded[:, 1:].bool(), probs > 0.5)
    assert torch.equal(decoded[:, 0].bool(), ~(probs > 0.5).any(1))
    no_labels = model(**{k: v for k, v in batch.items() if k != "labels"})
    assert no_labels.loss is None


def test_threshold_decode_and_top_k():
    logits = torch.tensor([[0.0, 3.0, 2.0, 1.0, -1.0], [5.0, 1.0, 2.0, 3.0, 4.0], [0.0, 1.0, 1.0, -2.0, 0.5]])
    assert threshold_decode(logits).tolist() == [[0, 1, 1, 1, 0], [1, 0, 0, 0, 0], [0, 1, 1, 0, 1]]
    assert threshold_decode(logits, top_k=2).tolist() == [[0, 1, 1, 0, 0], [1, 0, 0, 0, 0], [0, 1, 1, 0, 0]]


def test_top_k_counts_relations_only_whatever_the_threshold():
    """``top_k`` = at most k relations, ranked among the relation classes: with a threshold under 0.5 the none class
    no longer takes a place (it used to: threshold 0.3 with top_k 1 then kept nothing on pairs whose best relation
    scored in (0.3, 0.5))."""
    torch.manual_seed(0)
    logits = torch.randn(400, 8) * 2
    probs = torch.sigmoid(logits[:, 1:] - logits[:, :1])
    decoded = threshold_decode(logits, top_k=1, threshold=0.3)[:, 1:]
    best = probs.max(1)
    assert torch.equal(decoded.sum(1), (best.values > 0.3).float())  # one relation for every pair whose best > 0.3
    assert torch.equal(decoded.argmax(1)[best.values > 0.3], best.indices[best.values > 0.3])
    assert ((best.values > 0.3) & (best.values < 0.5)).sum() > 20  # the pairs the old rule emptied
    two = threshold_decode(logits, top_k=2, threshold=0.4)[:, 1:]
    assert two.sum(1).max() == 2 and torch.equal(two.sum(1), (probs > 0.4).sum(1).clamp(max=2).float())


# --------------------------------------------------------------------------- losses


def test_adaptive_thresholding_loss():
    labels = torch.tensor([[0.0, 1.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0]])
    good = torch.tensor([[0.0, 20.0, -20.0, -20.0], [0.0, -20.0, -20.0, -20.0]])
    assert adaptive_thresholding_loss(good, labels).item() < 1e-6
    # positives share one softmax: two equally confident positives cost log 2 each (ATLOP's formulation)
    two = torch.tensor([[0.0, 20.0, -20.0, 20.0]])
    assert adaptive_thresholding_loss(two, torch.tensor([[0.0, 1.0, 0.0, 1.0]])).item() == pytest.approx(
        2 * math.log(2), rel=1e-4
    )
    labels = torch.tensor([[0.0, 1.0, 0.0, 1.0], [1.0, 0.0, 0.0, 0.0]])
    bad = torch.tensor([[0.0, -5.0, 5.0, -5.0], [0.0, 5.0, 5.0, 5.0]])
    assert adaptive_thresholding_loss(bad, labels).item() > 5
    # one pair by hand: positives {1} vs threshold; threshold vs negatives {2}
    logits = torch.tensor([[0.5, 1.0, 2.0]])
    lab = torch.tensor([[0.0, 1.0, 0.0]])
    expected = -math.log(math.exp(1.0) / (math.exp(1.0) + math.exp(0.5))) - math.log(
        math.exp(0.5) / (math.exp(0.5) + math.exp(2.0))
    )
    assert adaptive_thresholding_loss(logits, lab).item() == pytest.approx(expected, rel=1e-6)


def test_none_class_ranking_loss_by_hand():
    sig = lambda x: 1 / (1 + math.exp(-x))  # noqa: E731
    logits = torch.tensor([[0.0, 2.0, -1.0]])
    labels = torch.tensor([[0.0, 1.0, 0.0]])
    # relation margins 2 (positive) and -1 (negative); none margin 0 - mean(2, -1) = -0.5, target 0
    plain = -math.log(sig(2)) - math.log(1 - sig(-1)) - math.log(1 - sig(-0.5))
    assert none_class_ranking_loss(logits, labels, margin_shift=0.0).item() == pytest.approx(plain, rel=1e-6)
    shifted = -math.log(sig(2)) - math.log(1 - sig(-1) + 0.05) - math.log(1 - sig(-0.5) + 0.05)
    assert none_class_ranking_loss(logits, labels, margin_shift=0.05).item() == pytest.approx(shifted, rel=1e-6)
    weighted = -math.log(sig(2)) - math.log(1 - sig(-1)) - 0.5 * math.log(1 - sig(-0.5))
    value = none_class_ranking_loss(logits, labels, margin_shift=0.0, none_weight=0.5).item()
    assert value == pytest.approx(weighted, rel=1e-6)
    # margin shifting: a negative already below the shift gets no gradient at all
    x = torch.tensor([[0.0, -6.0, -1.0]], requires_grad=True)
    none_class_ranking_loss(x, torch.tensor([[1.0, 0.0, 0.0]]), margin_shift=0.05, none_weight=0.0).backward()
    assert x.grad[0, 1] == 0 and x.grad[0, 2] != 0


# --------------------------------------------------------------------------- long inputs and pooling


def test_long_inputs_windows_cover_and_match_the_encoder(tokenizer, batch):
    model = tiny_model(tokenizer, max_positions=POSITIONS).eval()
    window = model.config.window
    lengths = batch["attention_mask"].sum(1).tolist()
    plans = window_plan(lengths, window)
    windows = Windows.build(batch["attention_mask"], window)
    for b, n in enumerate(lengths):
        mine = [(k, p) for k, p in enumerate(plans) if p[0] == b]
        covered = torch.zeros(n)
        for k, (_, s, n_win, j0, j1, p0) in mine:
            covered[p0 : p0 + j1 - j0] += 1
            # each window reads [CLS], its content, [SEP]; its kept columns are the document positions p0...
            expected = [0, *range(s + 1, s + n_win - 1), n - 1]
            assert windows.source[k, :n_win].tolist() == expected
            assert windows.source[k][windows.kept[k]].tolist() == list(range(p0, p0 + j1 - j0))
        assert bool((covered >= 1).all())
        starts = [p[1] for _, p in mine]
        assert all(b2 - b1 <= (window - 2) // 2 for b1, b2 in zip(starts, starts[1:]))  # overlaps >= half window
    transformer = model.encoder.transformer
    with torch.no_grad():
        encoded = model.encoder(batch["input_ids"], batch["attention_mask"], batch["entity_pos"])
        seq, att = encoded.last_hidden_state, encoded.entity_attention
        assert seq.shape[:2] == batch["input_ids"].shape and att.shape[-1] == batch["input_ids"].shape[1]
        with_mentions = torch.tensor([bool(m) for e in batch["entity_pos"] for m in e])
        assert torch.allclose(att[with_mentions].sum(-1), torch.ones(att.shape[:2])[with_mentions], atol=1e-5)
        # positions seen only by a document's first window equal the encoder's output on that window
        b, n = 0, lengths[0]
        second = [p for p in plans if p[0] == b][1]
        ids = torch.cat([batch["input_ids"][b, : window - 1], batch["input_ids"][b, n - 1 : n]]).unsqueeze(0)
        direct = transformer(input_ids=ids).last_hidden_state[0]
        only_first = second[5]
        assert torch.allclose(seq[b, :only_first], direct[:only_first], atol=1e-5)
        # a short document batched with long ones is encoded as if alone
        short = featurize_document(
            __import__("envre_hf.documents", fromlist=["Document"]).Document(
                title="t", sents=[["Paris", "is", "in", "France", "."]], entities=[], relations=[]
            ),
            tokenizer,
        )["input_ids"]
        ids = torch.zeros((2, batch["input_ids"].shape[1]), dtype=torch.long)
        mask = torch.zeros_like(ids)
        ids[0], mask[0] = batch["input_ids"][0], batch["attention_mask"][0]
        ids[1, : len(short)], mask[1, : len(short)] = torch.tensor(short), 1
        seq2 = model.encoder(ids, mask, [batch["entity_pos"][0], []]).last_hidden_state
        alone = transformer(input_ids=torch.tensor([short])).last_hidden_state[0]
        assert torch.allclose(seq2[1, : len(short)], alone, atol=1e-5)


def test_short_batch_uses_one_pass_and_equals_encoder(tokenizer, batch):
    model = tiny_model(tokenizer, max_positions=512).eval()
    with torch.no_grad():
        encoded = model.encoder(batch["input_ids"], batch["attention_mask"], batch["entity_pos"])
        with eager(model):  # the encoder runs SDPA by default, which returns no attentions
            out = model.encoder.transformer(
                input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], output_attentions=True
            )
    embeddings, attention = pool_by_loops(out.last_hidden_state, out.attentions[-1], batch["entity_pos"])
    assert torch.allclose(encoded.last_hidden_state, out.last_hidden_state, atol=1e-5)
    assert torch.allclose(encoded.entity_embeddings, embeddings, atol=1e-5)
    assert torch.allclose(encoded.entity_attention, attention, atol=1e-6)


def test_pair_features_match_a_plain_loop(tokenizer, batch):
    model = tiny_model(tokenizer, max_positions=POSITIONS).eval()
    with torch.no_grad():
        seq, att = full_attention(model, batch["input_ids"], batch["attention_mask"])
        emb, att_e = pool_by_loops(seq, att, batch["entity_pos"])
        per_doc = [len(e) for e in batch["entity_pos"]]
        embs, atts = emb.split(per_doc), att_e.split(per_doc)
        hs, ts, rs = model.pair_features(DocREEncoderOutput(seq, emb, att_e), batch["entity_pos"], batch["hts"])
    row = 0
    for b, entities in enumerate(batch["entity_pos"]):
        assert embs[b].shape == (len(entities), 32) and atts[b].shape == (len(entities), 2, seq.shape[1])
        for h, t in batch["hts"][b]:
            weights = (atts[b][h] * atts[b][t]).mean(0)
            weights = weights / (weights.sum() + 1e-5)
            assert torch.allclose(hs[row], embs[b][h]) and torch.allclose(ts[row], embs[b][t])
            assert torch.allclose(rs[row], weights @ seq[b], atol=1e-5)
            row += 1
    assert row == hs.shape[0]


# --------------------------------------------------------------------------- saving, loading, Auto classes


def test_save_load_round_trip_and_auto_model(tokenizer, batch, tmp_path):
    model = tiny_model(tokenizer, "ncrl", max_positions=POSITIONS).eval()
    model.save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    assert (tmp_path / "model.safetensors").exists() and not list(tmp_path.glob("*.bin"))
    saved = json.loads((tmp_path / "config.json").read_text())
    assert saved["model_type"] == "docre" and saved["head_type"] == "ncrl" and saved["encoder"]["hidden_size"] == 32
    assert isinstance(AutoConfig.from_pretrained(tmp_path), DocREConfig)
    for loader in (AutoModel.from_pretrained, DocREModel.from_pretrained, ATLOPModel.from_pretrained):
        loaded = loader(tmp_path).eval()
        assert type(loaded) is ATLOPModel and loaded.config.head_type == "ncrl"
        with torch.no_grad():
            assert torch.equal(model(**batch).logits, loaded(**batch).logits)
    assert type(DocREModel(model.config)) is ATLOPModel
    assert type(AutoModel.from_config(model.config)) is ATLOPModel


def test_pickled_checkpoints_are_never_loaded(tokenizer, tmp_path):
    model = tiny_model(tokenizer, "atlop", max_positions=POSITIONS)
    model.save_pretrained(tmp_path)
    # a directory offering only a pickled checkpoint (as an untrusted download might) is refused
    torch.save(model.state_dict(), tmp_path / "pytorch_model.bin")
    (tmp_path / "model.safetensors").unlink()
    for loader in (AutoModel.from_pretrained, DocREModel.from_pretrained, ATLOPModel.from_pretrained):
        with pytest.raises(EnvironmentError, match="safetensors"):
            loader(tmp_path)
    with pytest.raises(EnvironmentError, match="safetensors"):
        ATLOPModel.from_encoder_pretrained(tmp_path)


def test_head_registry_and_config_validation():
    assert head_class("atlop") is ATLOPModel and head_class("ncrl") is ATLOPModel
    assert all(issubclass(head_class(h), DocREPreTrainedModel) for h in HEAD_TYPES)
    with pytest.raises(ValueError, match="head_type"):
        DocREConfig(head_type="nope")
    with pytest.raises(ValueError, match="multiple of block_size"):
        DocREConfig(emb_size=30, block_size=8)
    config = DocREConfig()
    assert config.num_labels == 97 and config.id2label[0] == "Na" and config.id2label[1] == "P6"


def test_from_encoder_pretrained_keeps_the_encoder_weights():
    path = minilm_dir()
    model = ATLOPModel.from_encoder_pretrained(path, head_type="ncrl", emb_size=64, block_size=8)
    reference = AutoModel.from_pretrained(path)
    mine = model.encoder.transformer.state_dict()
    for name, tensor in reference.state_dict().items():
        assert torch.equal(mine[name], tensor), name
    # a local folder is recorded by its name only: saved configs and cards never hold a local absolute path
    assert model.config.head_type == "ncrl" and model.config.encoder_name_or_path == os.path.basename(path)
    assert model.config.window == 512 and model.config.hidden_size == 384
    other = [h for h in HEAD_TYPES if head_class(h) is not ATLOPModel]
    if other:
        with pytest.raises(ValueError, match="does not implement"):
            ATLOPModel.from_encoder_pretrained(path, head_type=other[0])


# --------------------------------------------------------------------------- learning on real documents


def _train_until(model, batch, max_steps=400, lr=5e-3, target=0.9):
    """AdamW with a short warm-up and gradient clipping (as ATLOP/NCRL train); stop at micro-F1 > target."""
    opt = torch.optim.AdamW(model.parameters(), lr=lr)
    gold = batch["labels"][:, 1:]
    losses, f1 = [], 0.0
    for step in range(max_steps):
        for group in opt.param_groups:
            group["lr"] = lr * min(1.0, (step + 1) / 30)
        model.train()
        loss = model(**batch).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad()
        losses.append(loss.item())
        if step % 10 == 9:
            model.eval()
            with torch.no_grad():
                pred = model.decode(model(**batch).logits)[:, 1:]
            f1 = (2 * (pred * gold).sum() / (pred.sum() + gold.sum())).item()
            if f1 > target:
                break
    return losses, f1


@pytest.mark.slow
@pytest.mark.parametrize("head_type", ["atlop", "ncrl"])
def test_overfits_real_documents(tokenizer, small_docs, batch, head_type):
    from envre_hf.metrics import score_predictions
    from envre_hf.models.prediction import predict

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        model = tiny_model(tokenizer, head_type, max_positions=128)
        losses, f1 = _train_until(model, batch)
    finally:
        torch.set_num_threads(threads)
    assert f1 > 0.9, f"{head_type}: F1 {f1:.3f} after {len(losses)} steps"
    assert sum(losses[-5:]) / 5 < sum(losses[:5]) / 5 / 2
    rows = predict(model, small_docs, tokenizer, batch_size=2, progress=False)
    assert rows and set(rows[0]) == {"title", "h_idx", "t_idx", "r", "evidence"}
    scores = score_predictions(rows, small_docs)
    assert scores.f1 > 0.9


def test_prediction_rows_follow_documents_and_carry_doc_ids(tokenizer, small_docs):
    from dataclasses import replace

    from envre_hf.models.prediction import predict

    docs = [replace(d, doc_id=f"{d.title}#{i}") for i, d in enumerate(small_docs)]
    model = tiny_model(tokenizer, max_positions=POSITIONS)
    with torch.no_grad():
        model.bilinear.weight.zero_()
        model.bilinear.bias.zero_()
        model.bilinear.bias[5] = 10.0  # every pair gets class 5 only: the others tie with the threshold
    rows = predict(model, docs, tokenizer, batch_size=3, progress=False)
    n_pairs = [d.num_entities * (d.num_entities - 1) for d in docs]
    assert len(rows) == sum(n_pairs)
    assert [r["doc_id"] for r in rows] == [d.doc_id for d, n in zip(docs, n_pairs) for _ in range(n)]
    assert {r["r"] for r in rows} == {model.config.id2label[5]}
    first = [(r["h_idx"], r["t_idx"]) for r in rows[: n_pairs[0]]]
    assert first == [(h, t) for h in range(docs[0].num_entities) for t in range(docs[0].num_entities) if h != t]


# --------------------------------------------------------------------------- sharing


class _RecordingApi:
    """Stands in for HfApi: records the calls and the exact files of the upload."""

    def __init__(self):
        self.calls, self.files = [], {}

    def create_repo(self, repo_id, **kwargs):
        self.calls.append(("create_repo", repo_id, kwargs))

    def upload_folder(self, repo_id, folder_path, **kwargs):
        self.calls.append(("upload_folder", repo_id, kwargs))
        for root, _, names in os.walk(folder_path):
            for name in names:
                path = os.path.join(root, name)
                self.files[os.path.relpath(path, folder_path)] = open(path, "rb").read()
        return SimpleNamespace(oid="c0ffee", commit_url="commit-url")

    def repo_info(self, repo_id, **kwargs):  # the push is confirmed against the repository's head
        return SimpleNamespace(sha="c0ffee")

    def list_repo_files(self, repo_id, **kwargs):  # ... and against the files of the reported commit
        return list(self.files)


def test_push_uploads_weights_tokenizer_and_card(tokenizer, batch, tmp_path):
    from envre_hf.models.hub import push_docre_model

    model = tiny_model(tokenizer, max_positions=POSITIONS).eval()
    model.config.encoder_name_or_path = "sentence-transformers/all-MiniLM-L6-v2"
    api = _RecordingApi()
    scores = {"Re-DocRED test": {"f1": 0.6512, "ign_f1": 0.6401, "precision": 0.7, "recall": 0.61}}
    result = push_docre_model(
        model, "me/atlop-minilm", tokenizer, training_data="Re-DocRED train", scores=scores, license="mit", api=api
    )
    assert result.commit_url == "commit-url"
    assert [c[0] for c in api.calls] == ["create_repo", "upload_folder"]
    assert {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "README.md"} <= set(
        api.files
    )
    card = api.files["README.md"].decode()
    assert "base_model: sentence-transformers/all-MiniLM-L6-v2" in card and "- atlop" in card
    assert "ATLOP (adaptive thresholding" in card and "Re-DocRED train" in card
    assert "| Re-DocRED test | 65.12 | 64.01 | 70.00 | 61.00 |" in card
    assert 'AutoModel.from_pretrained("me/atlop-minilm")' in card
    # what was uploaded loads back to the same model
    folder = tmp_path / "upload"
    for name, data in api.files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
    with torch.no_grad():
        assert torch.equal(AutoModel.from_pretrained(folder).eval()(**batch).logits, model(**batch).logits)


def test_envre_evaluate_model(tokenizer, small_docs, tmp_path, capsys):
    from envre_hf.cli.main import main
    from envre_hf.documents import write_documents
    from envre_hf.metrics import score_predictions
    from envre_hf.models.prediction import predict

    model = tiny_model(tokenizer, max_positions=POSITIONS)
    with torch.no_grad():
        model.bilinear.weight.zero_()
        model.bilinear.bias.zero_()
        model.bilinear.bias[model.config.label2id["P17"]] = 10.0  # "country" for every pair
    model.save_pretrained(tmp_path / "model")
    tokenizer.save_pretrained(tmp_path / "model")
    write_documents(small_docs, tmp_path / "gold.json")
    code = main(
        [
            "evaluate",
            "--model", str(tmp_path / "model"),
            "--gold", str(tmp_path / "gold.json"),
            "--batch-size", "3",
            "--output", str(tmp_path / "scores.json"),
            "--save-predictions", str(tmp_path / "preds.json"),
        ]
    )  # fmt: skip
    assert code == 0
    printed = json.loads(capsys.readouterr().out)
    saved = json.loads((tmp_path / "preds.json").read_text())
    expected_rows = predict(model, small_docs, tokenizer, progress=False)
    assert saved == expected_rows and {r["r"] for r in saved} == {"P17"}
    expected = score_predictions(expected_rows, small_docs)
    assert printed["f1"] == pytest.approx(expected.f1) and printed["precision"] == pytest.approx(expected.precision)
    n_p17 = sum(r.r == "P17" for d in small_docs for r in d.relations)
    assert printed["precision"] == pytest.approx(n_p17 / len(saved))
    written = json.loads((tmp_path / "scores.json").read_text())
    assert {k: written[k] for k in printed} == printed


def test_group_bilinear_matches_autograd_of_the_outer_product():
    from envre_hf.models import group_bilinear

    torch.manual_seed(0)
    zh = torch.randn(5, 12, dtype=torch.double, requires_grad=True)
    zt = torch.randn(5, 12, dtype=torch.double, requires_grad=True)
    plain = (zh.view(5, 3, 4, 1) * zt.view(5, 3, 1, 4)).reshape(5, 48)
    assert torch.equal(group_bilinear(zh, zt, 4), plain)
    assert torch.autograd.gradcheck(lambda a, b: group_bilinear(a, b, 4), (zh, zt))
    with pytest.raises(ValueError):
        group_bilinear(zh, zt, 5)


@pytest.mark.parametrize("pairs", [0, 3, 7, 8, 17])
def test_chunked_group_bilinear_logits_equal_the_materialised_ones(pairs):
    """The prediction path (one reused features buffer, ``chunk`` pairs at a time, a shorter last chunk)
    gives the logits of the features of all pairs at once."""
    from envre_hf.models.modeling_docre import group_bilinear, group_bilinear_classify

    torch.manual_seed(pairs)
    zh, zt = torch.randn(pairs, 12, dtype=torch.double), torch.randn(pairs, 12, dtype=torch.double)
    linear = torch.nn.Linear(48, 5).double()
    features, full = group_bilinear_classify(zh, zt, 4, linear)
    assert torch.equal(features, group_bilinear(zh, zt, 4)) and torch.equal(full, linear(features))
    none, chunked = group_bilinear_classify(zh, zt, 4, linear, keep_features=False, chunk=4)
    assert none is None and chunked.shape == (pairs, 5)
    assert torch.allclose(chunked, linear(group_bilinear(zh, zt, 4)), rtol=0, atol=1e-12)
    with pytest.raises(ValueError, match="block size 5"):
        group_bilinear_classify(zh, zt, 5, linear, keep_features=False)


def test_atlop_forward_equals_its_textbook_composition(tokenizer, batch):
    """The per-entity extractor shortcut and the batched pooling give ATLOP's formula exactly."""
    model = tiny_model(tokenizer, max_positions=POSITIONS).eval()
    with torch.no_grad():
        logits = model(**batch).logits
        encoded = model.encoder(batch["input_ids"], batch["attention_mask"], batch["entity_pos"])
        hs, ts, rs = model.pair_features(encoded, batch["entity_pos"], batch["hts"])
        zh = torch.tanh(model.head_extractor(torch.cat([hs, rs], -1)))
        zt = torch.tanh(model.tail_extractor(torch.cat([ts, rs], -1)))
        b1, b2 = zh.view(-1, 4, 8, 1), zt.view(-1, 4, 1, 8)
        reference = model.bilinear((b1 * b2).reshape(-1, 32 * 8))
    assert torch.allclose(logits, reference, atol=1e-5)


def test_roberta_style_encoder_window_and_long_inputs(redocred_dev):
    """RoBERTa's positions start after the padding index: the usable window is max_position_embeddings - 2."""
    from transformers import RobertaConfig

    from _training_helpers import build_roberta_style_tokenizer

    tok = build_roberta_style_tokenizer(redocred_dev[:30])
    encoder = RobertaConfig(
        vocab_size=tok.vocab_size + 10,
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=66,
        pad_token_id=1,
    )
    torch.manual_seed(0)
    model = ATLOPModel(DocREConfig(encoder=encoder, emb_size=32, block_size=8)).eval()
    assert model.config.window == 64
    feats = [featurize_document(d, tok) for d in redocred_dev[:2]]
    batch = DocRECollator(tok)(feats)
    assert batch["input_ids"].shape[1] > 64
    with torch.no_grad():
        out = model(**batch)
    assert out.logits.shape == (sum(len(f["hts"]) for f in feats), 97) and torch.isfinite(out.loss)


@pytest.mark.parametrize("head_type", ["atlop", "ncrl"])
def test_documents_without_pairs(tokenizer, small_docs, head_type):
    from dataclasses import replace

    doc = small_docs[0]
    one = replace(doc, entities=doc.entities[:1], relations=[])
    none = replace(doc, entities=[], relations=[])
    model = tiny_model(tokenizer, head_type, max_positions=POSITIONS)
    out = model(**DocRECollator(tokenizer)([featurize_document(d, tokenizer) for d in (one, none)]))
    assert out.logits.shape == (0, 97) and out.loss.item() == 0.0
    out.loss.backward()  # a batch without pairs must not break training
    mixed = [featurize_document(d, tokenizer) for d in (one, doc)]
    out = model(**DocRECollator(tokenizer)(mixed))
    assert out.logits.shape == (len(mixed[1]["hts"]), 97) and torch.isfinite(out.loss)
    # the document's logits are the ones it gets alone: the pairless neighbour changes nothing
    model.eval()
    with torch.no_grad():
        alone = model(**DocRECollator(tokenizer)([mixed[1]])).logits
        both = model(**DocRECollator(tokenizer)(mixed)).logits
    assert torch.allclose(both, alone, atol=1e-5)


def test_trainer_with_featurized_dataset_and_collator(tokenizer, small_docs, tmp_path):
    """Featurized documents + DocRECollator plug into transformers.Trainer unchanged (unused columns dropped)."""
    from transformers import Trainer, TrainingArguments

    from envre_hf.features import featurize_document

    model = tiny_model(tokenizer, max_positions=128)
    before = model.bilinear.weight.detach().clone()
    args = TrainingArguments(
        output_dir=str(tmp_path), max_steps=2, per_device_train_batch_size=2, learning_rate=1e-3,
        report_to=[], use_cpu=True, save_strategy="no", logging_steps=1,
    )  # fmt: skip
    train = [featurize_document(d, tokenizer) for d in small_docs]
    trainer = Trainer(model=model, args=args, train_dataset=train, data_collator=DocRECollator(tokenizer))
    result = trainer.train()
    assert result.global_step == 2 and math.isfinite(result.training_loss)
    assert not torch.equal(before, model.bilinear.weight.detach())


def test_a_model_folder_without_a_tokenizer_names_itself_and_the_fix(tokenizer, tmp_path, monkeypatch):
    """The tokenizer falls back to the encoder the model was built from; where that cannot be found (a local
    encoder folder is saved under its base name only), the error names the model folder and what to do."""
    from envre_hf.models.prediction import load_for_inference

    import huggingface_hub.constants

    import transformers.utils.hub

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)  # no Hub lookup of the missing name
    monkeypatch.setattr(transformers.utils.hub, "_hf_api", None)  # the HfApi made by the lookup is not kept
    model = tiny_model(tokenizer, max_positions=POSITIONS)
    model.config.encoder_name_or_path = "an-encoder-folder-that-is-not-here"
    model.save_pretrained(tmp_path / "model")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match=r"model holds no tokenizer .*'an-encoder-folder-that-is-not-here'.*save_pretrained"):
        load_for_inference(str(tmp_path / "model"), "cpu")
    tokenizer.save_pretrained(tmp_path / "model")
    loaded, tok = load_for_inference(str(tmp_path / "model"), "cpu")
    assert tok.vocab_size == tokenizer.vocab_size and not loaded.training


def test_the_bf16_crash_size_goes_through_the_linear_layer_in_two_parts_with_the_same_result(monkeypatch):
    """The SIGFPE workaround (benchmarks/check_bf16_rows.py) splits exactly that input size and changes no result."""
    from envre_hf.models import modeling_docre

    monkeypatch.setattr(modeling_docre, "_BF16_CRASH_ELEMENTS", 32 * 24)
    torch.manual_seed(0)
    linear = torch.nn.Linear(24, 5)
    calls = []
    linear.register_forward_hook(lambda module, args, out: calls.append(args[0].shape[0]))
    for rows in (31, 32, 33):
        x = torch.randn(rows, 24)
        calls.clear()
        assert torch.allclose(modeling_docre._rows_linear(linear, x), x @ linear.weight.T + linear.bias, atol=1e-6)
        assert calls == ([31, 1] if rows == 32 else [rows])
