"""EVRT losses against hand computations, the objective's composition and the ablation switches."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

import pytest
import torch

from envre_hf.models.losses import threshold_margins

from envre_hf.training import (
    EVRTPairCollator,
    EVRTTrainer,
    EVRTTrainingArguments,
    prediction_consistency_loss,
    representation_consistency_loss,
    symmetric_bernoulli_kl,
)


def _kl_bernoulli(p: float, q: float) -> float:
    return p * math.log(p / q) + (1 - p) * math.log((1 - p) / (1 - q))


def _bce_logits(x: float, y: float) -> float:
    """-[y log sigmoid(x) + (1 - y) log(1 - sigmoid(x))], written out."""
    s = 1 / (1 + math.exp(-x))
    return -(y * math.log(s) + (1 - y) * math.log(1 - s))


def _sigmoid(x: float) -> float:
    return 1 / (1 + math.exp(-x))


def test_representation_consistency_released_mean_and_paper_sum():
    z = torch.tensor([[1.0, 2.0], [0.0, 0.0]])
    z_twin = torch.tensor([[0.0, 0.0], [3.0, 4.0]])
    # squared differences 1, 4, 9, 16: released MSE over pairs x dims = 30 / 4; paper: (5 + 25) / 2 pairs
    assert representation_consistency_loss(z, z_twin).item() == pytest.approx(7.5)
    assert representation_consistency_loss(z, z_twin, reduction="sum").item() == pytest.approx(15.0)
    assert representation_consistency_loss(z, z).item() == 0.0
    with pytest.raises(ValueError, match="reduction"):
        representation_consistency_loss(z, z_twin, reduction="max")


def test_prediction_consistency_released_bce_on_threshold_margins():
    # two pairs, threshold class 0 and two relations
    a = torch.tensor([[0.5, 2.0, -1.0], [0.0, 0.3, 0.1]])
    b = torch.tensor([[1.0, 0.0, 1.5], [-0.5, 0.2, 0.9]])
    ma = [[1.5, -1.5], [0.3, 0.1]]  # logit_r - logit_0
    mb = [[-1.0, 0.5], [0.7, 1.4]]
    one = sum(_bce_logits(mb[i][r], _sigmoid(ma[i][r])) for i in range(2) for r in range(2))
    two = sum(_bce_logits(ma[i][r], _sigmoid(mb[i][r])) for i in range(2) for r in range(2))
    expected = (one + two) / 2 / 2
    a, b = threshold_margins(a), threshold_margins(b)  # what the trainer passes: model.relation_margins(logits)
    assert prediction_consistency_loss(a, b).item() == pytest.approx(expected, rel=1e-5)
    assert prediction_consistency_loss(b, a).item() == pytest.approx(expected, rel=1e-5)
    # targets are not detached: both sides get a gradient
    a_, b_ = a.clone().requires_grad_(), b.clone().requires_grad_()
    prediction_consistency_loss(a_, b_).backward()
    assert a_.grad.abs().sum() > 0 and b_.grad.abs().sum() > 0
    # on identical inputs the released form is not 0: it is the binary entropy of the margins' probabilities
    # (summed over relations, averaged over pairs), so it also sharpens confident predictions
    entropy = sum(_bce_logits(ma[i][r], _sigmoid(ma[i][r])) for i in range(2) for r in range(2)) / 2
    assert prediction_consistency_loss(a, a).item() == pytest.approx(entropy, rel=1e-5)


def test_prediction_consistency_paper_symmetric_kl_of_margin_probabilities():
    a = torch.tensor([[2.1972246, -0.4054651]])  # margins: P = sigmoid(margin) = 0.9, 0.4
    b = torch.tensor([[0.4054651, 0.0]])  # P = 0.6, 0.5
    pair0 = _kl_bernoulli(0.9, 0.6) + _kl_bernoulli(0.6, 0.9) + _kl_bernoulli(0.4, 0.5) + _kl_bernoulli(0.5, 0.4)
    assert prediction_consistency_loss(a, b, form="sym_kl").item() == pytest.approx(pair0, rel=1e-5)
    assert prediction_consistency_loss(a, a, form="sym_kl").item() == pytest.approx(0.0, abs=1e-7)
    with pytest.raises(ValueError, match="form"):
        prediction_consistency_loss(a, b, form="js")


def test_summed_symmetric_kl_matches_the_definition():
    p = torch.tensor([[0.5, 0.9], [0.2, 0.3]])
    q = torch.tensor([[0.5, 0.6], [0.4, 0.3]])
    pair0 = 0.0 + _kl_bernoulli(0.9, 0.6) + _kl_bernoulli(0.6, 0.9)
    assert pair0 == pytest.approx(0.537528, abs=1e-6)
    assert symmetric_bernoulli_kl(p, q).sum(-1)[0].item() == pytest.approx(pair0, rel=1e-5)
    assert symmetric_bernoulli_kl(p, q).sum(-1)[1].item() == pytest.approx(
        _kl_bernoulli(0.2, 0.4) + _kl_bernoulli(0.4, 0.2), rel=1e-5
    )


@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_closed_form_group_bilinear_consistency_equals_the_materialised_features(reduction):
    from envre_hf.models.modeling_docre import group_bilinear
    from envre_hf.training.consistency import group_bilinear_consistency_loss

    torch.manual_seed(0)
    zh, zt, zh2, zt2 = (torch.randn(7, 12, dtype=torch.float64, requires_grad=True) for _ in range(4))
    closed = group_bilinear_consistency_loss(zh, zt, zh2, zt2, block_size=4, reduction=reduction)
    full = representation_consistency_loss(group_bilinear(zh, zt, 4), group_bilinear(zh2, zt2, 4), reduction=reduction)
    assert closed.item() == pytest.approx(full.item(), rel=1e-5)
    g_closed = torch.autograd.grad(closed, (zh, zt2))
    g_full = torch.autograd.grad(full, (zh, zt2))
    for a, b in zip(g_closed, g_full):
        assert torch.allclose(a.float(), b.float(), rtol=1e-4, atol=1e-6)


def test_closed_form_consistency_is_zero_for_identical_twins_and_exact_for_close_ones():
    from envre_hf.models.modeling_docre import group_bilinear
    from envre_hf.training.consistency import group_bilinear_consistency_loss

    torch.manual_seed(1)
    zh, zt = torch.randn(5, 8, dtype=torch.float64), torch.randn(5, 8, dtype=torch.float64)
    assert group_bilinear_consistency_loss(zh, zt, zh.clone(), zt.clone(), block_size=4).item() == 0.0
    zh2, zt2 = zh + 1e-3 * torch.randn_like(zh), zt + 1e-3 * torch.randn_like(zt)  # per-pair distances far below 1
    closed = group_bilinear_consistency_loss(zh, zt, zh2, zt2, block_size=4, reduction="sum")
    full = representation_consistency_loss(group_bilinear(zh, zt, 4), group_bilinear(zh2, zt2, 4), reduction="sum")
    assert 0 < full.item() < 1 and closed.item() == pytest.approx(full.item(), rel=1e-4)  # the expanded form was 4.5% off


def test_symmetric_kl_stays_finite_on_saturated_probabilities():
    value = symmetric_bernoulli_kl(torch.tensor([1.0, 0.0]), torch.tensor([0.0, 1.0]))
    assert torch.isfinite(value).all() and (value > 20).all()


def test_misaligned_tensors_are_rejected():
    with pytest.raises(ValueError, match="row-aligned"):
        representation_consistency_loss(torch.zeros(3, 2), torch.zeros(2, 2))
    with pytest.raises(ValueError, match="row-aligned"):
        prediction_consistency_loss(torch.zeros(3, 4), torch.zeros(3, 5))
    from envre_hf.training.consistency import group_bilinear_consistency_loss

    with pytest.raises(ValueError, match="row-aligned"):
        group_bilinear_consistency_loss(torch.zeros(3, 4), torch.zeros(3, 4), torch.zeros(2, 4), torch.zeros(2, 4), 2)


def test_empty_pair_sets_give_zero_with_gradient():
    z = torch.zeros(0, 4, requires_grad=True)
    loss = representation_consistency_loss(z, z.detach()) + prediction_consistency_loss(z, z.detach())
    assert loss.item() == 0.0 and loss.requires_grad


def test_arguments_validate_and_order_the_ablation_switches(tmp_path):
    args = EVRTTrainingArguments(output_dir=str(tmp_path), evrt=True, evrt_losses=["pcr", "clp"])
    assert args.evrt_losses == ["clp", "pcr"] and args.uses("pcr") and not args.uses("rcr")
    assert EVRTTrainingArguments(output_dir=str(tmp_path), evrt_losses="rcr,pcr").evrt_losses == ["rcr", "pcr"]
    assert not EVRTTrainingArguments(output_dir=str(tmp_path)).uses("clp")  # evrt off: no EVRT term
    with pytest.raises(ValueError, match="unknown term"):
        EVRTTrainingArguments(output_dir=str(tmp_path), evrt_losses=["kl"])
    with pytest.raises(ValueError, match="twin_file"):
        EVRTTrainingArguments(output_dir=str(tmp_path), evrt=True, twin_source="prebuilt")


def test_command_line_ablation_switches(tmp_path):
    from envre_hf.training.run import parse_args

    base = ["--model_name_or_path", "enc", "--train_file", "t.json", "--output_dir", str(tmp_path), "--evrt"]
    _, data, args = parse_args(base + ["--evrt_losses", "rcr", "clp", "--evrt_alpha", "0.5"])
    assert args.evrt_losses == ["clp", "rcr"] and args.evrt_alpha == 0.5 and data.train_file == "t.json"
    assert parse_args(base + ["--evrt_losses", "none"])[2].evrt_losses == []
    assert parse_args(base)[2].evrt_losses == ["clp", "rcr", "pcr"]


# --------------------------------------------------------------------------- objective composition


@dataclass
class _Output:
    loss: torch.Tensor | None
    logits: torch.Tensor
    pair_representations: torch.Tensor


class _PairModel(torch.nn.Module):
    """A minimal DocRE-shaped model: pair representation = [mean emb(h tokens); mean emb(t tokens)]."""

    def __init__(self, vocab: int = 50, dim: int = 4, labels: int = 5):
        super().__init__()
        torch.manual_seed(0)
        self.emb = torch.nn.Embedding(vocab, dim)
        self.head = torch.nn.Linear(2 * dim, labels)

    def forward(self, input_ids, attention_mask, entity_pos, hts, labels=None):
        reps = []
        for b, (doc_pos, doc_hts) in enumerate(zip(entity_pos, hts)):
            ents = [torch.stack([self.emb(input_ids[b, s:e]).mean(0) for s, e in spans]).mean(0) for spans in doc_pos]
            reps.extend(torch.cat([ents[h], ents[t]]) for h, t in doc_hts)
        z = torch.stack(reps)
        logits = self.head(z)
        loss = None if labels is None else self.loss_function(logits, labels)
        return _Output(loss, logits, z)

    def loss_function(self, logits, labels):
        return torch.nn.functional.binary_cross_entropy_with_logits(logits, labels)

    def relation_margins(self, logits):  # what EVRTTrainer's L_pcr reads: class 0 as the threshold
        return threshold_margins(logits)


def _features(ids: list[int], spans: list[list[tuple[int, int]]], key: str) -> dict:
    n = len(spans)
    hts = [[h, t] for h in range(n) for t in range(n) if h != t]
    labels = [[0.0] * 5 for _ in hts]
    labels[0][2] = 1.0
    for row in labels[1:]:
        row[0] = 1.0
    return {"input_ids": ids, "entity_pos": spans, "hts": hts, "labels": labels, "doc_key": key}


def _base_collator(features: list[dict]) -> dict:
    width = max(len(f["input_ids"]) for f in features)
    ids = torch.zeros(len(features), width, dtype=torch.long)
    mask = torch.zeros(len(features), width, dtype=torch.long)
    for i, f in enumerate(features):
        ids[i, : len(f["input_ids"])] = torch.tensor(f["input_ids"])
        mask[i, : len(f["input_ids"])] = 1
    return {
        "input_ids": ids,
        "attention_mask": mask,
        "entity_pos": [f["entity_pos"] for f in features],
        "hts": [f["hts"] for f in features],
        "labels": torch.tensor([row for f in features for row in f["labels"]]),
        "doc_keys": [f["doc_key"] for f in features],
    }


def _paired_batch() -> dict:
    spans_a = [[(1, 2)], [(3, 5)], [(6, 7)]]
    spans_b = [[(1, 3)], [(4, 5)]]
    examples = [
        {"original": _features([1, 2, 3, 4, 5, 6, 7, 8], spans_a, "a"), "twin": _features([1, 9, 9, 4, 5, 6, 7, 8], spans_a, "a#1")},
        {"original": _features([1, 10, 11, 12, 13], spans_b, "b"), "twin": _features([1, 20, 21, 22, 23, 24], [[(1, 4)], [(5, 6)]], "b#1")},
    ]
    return EVRTPairCollator(_base_collator)(examples)


def test_collator_keeps_pairs_aligned_with_the_twins_beside_the_originals():
    original = _paired_batch()
    twin = original["twin"]
    assert original["doc_keys"] == ["a", "b"] and twin["doc_keys"] == ["a#1", "b#1"]
    assert original["hts"] == twin["hts"]
    assert original["labels"].shape[0] == twin["labels"].shape[0] == 6 + 2
    assert original["input_ids"].shape == twin["input_ids"].shape == (2, 8)
    assert torch.equal(original["labels"], twin["labels"])


def test_collator_rejects_a_twin_with_other_pairs():
    a = _features([1, 2, 3, 4], [[(1, 2)], [(2, 3)]], "a")
    b = _features([1, 2, 3, 4], [[(1, 2)], [(2, 3)], [(3, 4)]], "a#1")
    with pytest.raises(ValueError, match="'a'.*entities"):
        EVRTPairCollator(_base_collator)([{"original": a, "twin": b}])
    b = dict(a, hts=[[1, 0], [0, 1]], doc_key="a#1")
    with pytest.raises(ValueError, match="hts"):
        EVRTPairCollator(_base_collator)([{"original": a, "twin": b}])


def _trainer(tmp_path, **kwargs) -> EVRTTrainer:
    args = EVRTTrainingArguments(output_dir=str(tmp_path), report_to=[], use_cpu=True, **kwargs)
    return EVRTTrainer(model=_PairModel(), args=args, data_collator=EVRTPairCollator(_base_collator))


@pytest.mark.parametrize(
    "losses", [["clp", "rcr", "pcr"], ["clp"], ["rcr"], ["pcr"], ["rcr", "pcr"], []], ids=lambda x: "+".join(x) or "none"
)
def test_objective_is_the_weighted_sum_of_the_switched_on_terms(tmp_path, losses):
    trainer = _trainer(tmp_path, evrt=True, evrt_alpha=0.3, evrt_beta=2.0, evrt_losses=losses)
    model = trainer.model
    batch = _paired_batch()
    loss = trainer.compute_loss(model, dict(batch))
    # Hand composition from the two sides.
    original, twin = batch, batch["twin"]
    keep = ("input_ids", "attention_mask", "entity_pos", "hts", "labels")
    out_o = model(**{k: original[k] for k in keep})
    out_t = model(**{k: twin[k] for k in keep})
    expected = out_o.loss
    parts = {"clo": out_o.loss.item()}
    if "clp" in losses:
        expected = expected + out_t.loss
        parts["clp"] = out_t.loss.item()
    diff = out_o.pair_representations - out_t.pair_representations
    rcr = (diff**2).mean()  # released: MSE over pairs x dims
    ma = out_o.logits[:, 1:] - out_o.logits[:, :1]
    mb = out_t.logits[:, 1:] - out_t.logits[:, :1]
    bce = torch.nn.functional.binary_cross_entropy_with_logits
    pcr = (bce(mb, torch.sigmoid(ma), reduction="sum") + bce(ma, torch.sigmoid(mb), reduction="sum")) / 2 / ma.shape[0]
    if "rcr" in losses:
        expected = expected + 0.3 * rcr
        parts["rcr"] = rcr.item()
    if "pcr" in losses:
        expected = expected + 2.0 * pcr
        parts["pcr"] = pcr.item()
    assert loss.item() == pytest.approx(expected.item(), rel=1e-5)
    assert rcr.item() > 0 and pcr.item() > 0  # the twins really differ
    tally = trainer.loss_tally
    recorded = {name: (tally.sums[name] / tally.counts[name]).item() for name in tally.sums}
    assert recorded == pytest.approx(parts, rel=1e-5)
    logs = {"loss": loss.item()}
    trainer.log(logs)
    assert {k for k in logs if k.startswith("loss_")} == {f"loss_{n}" for n in parts}


def test_without_evrt_only_the_originals_are_trained_on(tmp_path):
    trainer = _trainer(tmp_path, evrt=False)
    batch = _paired_batch()
    keep = ("input_ids", "attention_mask", "entity_pos", "hts", "labels")
    expected = trainer.model(**{k: batch[k] for k in keep}).loss
    assert trainer.compute_loss(trainer.model, dict(batch)).item() == pytest.approx(expected.item(), rel=1e-6)
    assert set(trainer.loss_tally.sums) == {"clo"}


def test_group_by_length_batches_pairs_of_similar_length(tmp_path):
    """``train_sampling_strategy="group_by_length"`` on an EVRT pair dataset: transformers' sampler, given the
    items' lengths, orders the pair items so that batches hold documents of similar length."""
    from transformers.trainer_pt_utils import LengthGroupedSampler

    from envre_hf.training import DocumentFeaturesDataset

    rng = random.Random(1)
    lengths = [rng.randint(5, 500) for _ in range(200)]
    docs = [{"input_ids": list(range(n)), "doc_key": str(i)} for i, n in enumerate(lengths)]
    dataset = DocumentFeaturesDataset(docs, featurize=lambda d: d)
    args = EVRTTrainingArguments(
        output_dir=str(tmp_path), report_to=[], use_cpu=True, per_device_train_batch_size=4,
        train_sampling_strategy="group_by_length",
    )  # fmt: skip
    trainer = EVRTTrainer(model=_PairModel(), args=args, train_dataset=dataset, data_collator=_base_collator)
    sampler = trainer._get_train_sampler()
    assert isinstance(sampler, LengthGroupedSampler)
    order = list(sampler)
    assert sorted(order) == list(range(200)) and lengths[order[0]] == max(lengths)  # the longest batch first

    def padding(seq):
        return sum(max(lengths[i] for i in seq[k : k + 4]) * 4 - sum(lengths[i] for i in seq[k : k + 4]) for k in range(0, 200, 4))

    shuffled = list(range(200))
    random.Random(2).shuffle(shuffled)
    assert padding(order) < padding(shuffled) / 3
