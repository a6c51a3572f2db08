"""KD-DocRE and DocuNet: pair-matrix machinery, losses, and the full models on tiny random encoders."""

from __future__ import annotations

import math

import pytest
import torch

from envre_hf.models.losses_kd_docunet import adaptive_focal_loss, balanced_threshold_loss, distillation_loss
from envre_hf.models.pair_matrix import AxialTransformer, PairIndex, PairUNet


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    """Tiny models gain nothing from intra-op threads; on a shared machine extra threads only thrash."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def _labels(rows: list[list[int]], num_classes: int = 6) -> torch.Tensor:
    out = torch.zeros(len(rows), num_classes)
    for i, row in enumerate(rows):
        for r in row:
            out[i, r] = 1
    return out


# ----------------------------------------------------------------------------- losses


def _afl_reference(logits: torch.Tensor, labels: torch.Tensor, gamma: float, weight: str) -> float:
    total = 0.0
    for row, lab in zip(logits.tolist(), labels.tolist()):
        th = row[0]
        pos = [r for r in range(1, len(row)) if lab[r] > 0]
        neg = [r for r in range(1, len(row)) if lab[r] == 0]
        for r in pos:
            p = math.exp(row[r]) / (math.exp(row[r]) + math.exp(th))
            focal = (1 - p) ** gamma
            total += -(1 + focal if weight == "released" else focal) * math.log(p)
        total += -(th - math.log(math.exp(th) + sum(math.exp(row[r]) for r in neg)))
    return total / len(logits)


def _balanced_reference(logits: torch.Tensor, labels: torch.Tensor) -> float:
    total = 0.0
    for row, lab in zip(logits.tolist(), labels.tolist()):
        th = row[0]
        pos = [r for r in range(1, len(row)) if lab[r] > 0]
        neg = [r for r in range(1, len(row)) if lab[r] == 0]
        total += math.log(1 + sum(math.exp(th - row[r]) for r in pos))
        total += math.log(1 + sum(math.exp(row[r] - th) for r in neg))
    return total / len(logits)


@pytest.mark.parametrize("weight", ["released", "paper"])
@pytest.mark.parametrize("gamma", [0.0, 1.0, 2.0])
def test_adaptive_focal_loss_matches_its_definition(gamma, weight):
    torch.manual_seed(0)
    logits = torch.randn(5, 6) * 2
    labels = _labels([[0], [1, 3], [2], [0], [1, 2, 5]])
    got = adaptive_focal_loss(logits, labels, gamma=gamma, weight=weight).item()
    assert got == pytest.approx(_afl_reference(logits, labels, gamma, weight), rel=1e-5)


def test_adaptive_focal_loss_defaults_to_the_released_weight():
    """One positive at margin 0 (p = 1/2), gamma 1: the released weight is 1 + 1/2, the paper's 1/2."""
    logits = torch.tensor([[0.0, 0.0, -50.0]])
    labels = _labels([[1]], num_classes=3)
    negative = math.log(1 + math.exp(-50.0))  # the threshold against the one negative
    assert adaptive_focal_loss(logits, labels).item() == pytest.approx(1.5 * math.log(2) + negative, rel=1e-6)
    assert adaptive_focal_loss(logits, labels, weight="paper").item() == pytest.approx(0.5 * math.log(2) + negative, rel=1e-6)


def test_balanced_threshold_loss_matches_its_definition():
    torch.manual_seed(1)
    logits = torch.randn(5, 6) * 2
    labels = _labels([[0], [1, 3], [2], [0], [1, 2, 5]])
    assert balanced_threshold_loss(logits, labels).item() == pytest.approx(_balanced_reference(logits, labels), rel=1e-5)


@pytest.mark.parametrize("loss_fn", [adaptive_focal_loss, balanced_threshold_loss])
def test_losses_push_positives_above_and_negatives_below_the_threshold(loss_fn):
    logits = torch.zeros(2, 6, requires_grad=True)
    labels = _labels([[2, 4], [0]])
    loss_fn(logits, labels).backward()
    grad = logits.grad
    assert (grad[0, [2, 4]] < 0).all()  # descent raises positive relations
    assert (grad[0, [1, 3, 5]] > 0).all()  # and lowers negative ones
    assert (grad[1, 1:] > 0).all() and grad[1, 0] < 0  # no-relation pair: threshold on top
    # A pair decoded right with large margins costs (almost) nothing.
    good = torch.tensor([[0.0, -20, 20, -20, 20, -20], [0.0, -20, -20, -20, -20, -20]])
    assert loss_fn(good, labels).item() < 1e-6


def test_focal_weighting_favours_hard_positives():
    """The paper's weight; the released 1 + (1 - p)^gamma only doubles a hard positive at most."""
    labels = _labels([[1], [1]])
    easy_hard = torch.tensor([[0.0, 3.0, -9, -9, -9, -9], [0.0, -3.0, -9, -9, -9, -9]], requires_grad=True)
    adaptive_focal_loss(easy_hard, labels, gamma=2.0, weight="paper").backward()
    with_focus = easy_hard.grad[:, 1].abs()
    easy_hard.grad = None
    adaptive_focal_loss(easy_hard, labels, gamma=0.0, weight="paper").backward()
    plain = easy_hard.grad[:, 1].abs()
    # Relative to plain ranking, the focal weight shrinks the easy positive's gradient much more.
    assert with_focus[0] / plain[0] < 0.1 * (with_focus[1] / plain[1])


def test_distillation_loss_is_mse_and_checks_shapes():
    student = torch.tensor([[1.0, 2.0], [0.0, -1.0]], requires_grad=True)
    teacher = torch.tensor([[0.0, 2.0], [0.0, 1.0]], requires_grad=True)
    loss = distillation_loss(student, teacher)
    assert loss.item() == pytest.approx((1 + 4) / 4)
    loss.backward()
    assert teacher.grad is None  # the teacher is never trained through the student's loss
    with pytest.raises(ValueError, match="teacher_logits"):
        distillation_loss(student, teacher[:1])
    with pytest.raises(ValueError, match="pairs x classes"):
        adaptive_focal_loss(torch.zeros(3, 4), torch.zeros(3, 5))


# ----------------------------------------------------------------------------- pair matrix


def _all_pairs(n: int) -> list[list[int]]:
    return [[h, t] for h in range(n) for t in range(n) if h != t]


def test_pair_index_scatter_gather_round_trip_and_masks():
    hts = [_all_pairs(3), _all_pairs(1), _all_pairs(2)]
    index = PairIndex.build(hts, [3, 1, 2])
    assert index.entity_mask.shape == (3, 3)
    values = torch.arange(8 * 2, dtype=torch.float).reshape(8, 2)
    matrix = index.scatter(values)
    assert matrix.shape == (3, 3, 3, 2)
    assert torch.equal(index.gather(matrix), values)
    assert torch.equal(matrix[0, 1, 2], values[3])  # (1, 2) is the 4th pair of a 3-entity document
    assert int(index.cell_mask().sum()) == 8
    assert not index.cell_mask()[0].diagonal().any()
    with pytest.raises(ValueError, match="document 1"):
        PairIndex.build([[[0, 1]], [[0, 2]]], [2, 2])


def test_pair_unet_handles_any_size_and_ignores_padding():
    torch.manual_seed(0)
    unet = PairUNet(in_channels=3, out_channels=4, base_channels=4, depth=2).eval()
    for n in (1, 2, 3, 5, 8):
        assert unet(torch.randn(2, 3, n, n), torch.ones(2, n, n)).shape == (2, 4, n, n)
    x = torch.randn(1, 3, 5, 5)
    alone = unet(x, torch.ones(1, 5, 5))
    padded_x = torch.zeros(1, 3, 11, 11)
    padded_x[..., :5, :5] = x
    padded_x[..., 7:, 7:] = 5.0  # another document's cells must not leak in
    mask = torch.zeros(1, 11, 11)
    mask[:, :5, :5] = 1
    assert torch.allclose(unet(padded_x, mask)[..., :5, :5], alone, atol=1e-6)
    # Skip connections + upsampling: every output cell sees the far corner of a 5x5 map.
    x2 = x.clone()
    x2[..., 4, 4] += 10
    assert (unet(x2, torch.ones(1, 5, 5)) - alone)[..., 0, 0].abs().max() > 0


def test_axial_transformer_reasons_in_two_hops():
    torch.manual_seed(0)
    n, dim = 4, 8
    index = PairIndex.build([_all_pairs(n)], [n])
    values = torch.randn(n * (n - 1), dim)

    def out_at(model, vals, h, t):
        return model(index.scatter(vals), index.cell_mask())[0, h, t]

    def perturbed(cell):
        vals = values.clone()
        vals[cell[0] * (n - 1) + (cell[1] if cell[1] < cell[0] else cell[1] - 1)] += 3.0
        return vals

    one = AxialTransformer(dim, num_layers=1, heads=2, dropout=0.0).eval()
    base = out_at(one, values, 0, 1)
    assert not torch.allclose(out_at(one, perturbed((0, 2)), 0, 1), base)  # same row
    assert not torch.allclose(out_at(one, perturbed((2, 1)), 0, 1), base)  # same column
    assert torch.allclose(out_at(one, perturbed((2, 3)), 0, 1), base)  # neither: out of reach in one hop
    two = AxialTransformer(dim, num_layers=2, heads=2, dropout=0.0).eval()
    assert not torch.allclose(out_at(two, perturbed((2, 3)), 0, 1), out_at(two, values, 0, 1))


def test_axial_transformer_output_does_not_depend_on_batch_mates():
    torch.manual_seed(0)
    model = AxialTransformer(8, num_layers=2, heads=2, dropout=0.0).eval()
    small = PairIndex.build([_all_pairs(2)], [2])
    both = PairIndex.build([_all_pairs(2), _all_pairs(4)], [2, 4])
    values = torch.randn(2 + 12, 8)
    alone = small.gather(model(small.scatter(values[:2]), small.cell_mask()))
    batched = both.gather(model(both.scatter(values), both.cell_mask()))[:2]
    assert torch.allclose(alone, batched, atol=1e-6)


# ----------------------------------------------------------------------------- full models


from _training_helpers import tiny_model  # noqa: E402
from transformers import AutoModel, BertModel  # noqa: E402

from envre_hf.documents import docred_schema  # noqa: E402
from envre_hf.features import DocRECollator, featurize_document  # noqa: E402
from envre_hf.models import DocREModel, DocuNetModel, KDDocREModel  # noqa: E402

FAMILIES = {
    # Tiny heads: small U-Net / axial stack, no dropout so that training runs are deterministic.
    "kd_docre": (KDDocREModel, {"axial_heads": 4, "axial_dropout": 0.0, "pair_dim": 64}),
    "docunet": (DocuNetModel, {"unet_base_channels": 8, "unet_out_channels": 16}),
}


@pytest.fixture(scope="module")
def short_docs(redocred_dev):
    """The four shortest dev documents (7-18 entities, ~130 words each)."""
    return sorted(redocred_dev, key=lambda d: (sum(map(len, d.sents)), d.title))[:4]


@pytest.fixture(scope="module")
def short_batch(short_docs, tokenizer):
    return DocRECollator(tokenizer)([featurize_document(d, tokenizer) for d in short_docs])


def sizes(head_type: str, **settings) -> dict:
    """``tiny_model`` options of the models here: emb 64, block 16, the family's tiny settings (and ``settings``),
    BERT dropout 0.1."""
    return {"emb_size": 64, "block_size": 16, "dropout": 0.1, "head_settings": {**FAMILIES[head_type][1], **settings}}


def _sub_batch(batch, i):
    n = int(batch["attention_mask"][i].sum())
    return {
        "input_ids": batch["input_ids"][i : i + 1, :n],
        "attention_mask": batch["attention_mask"][i : i + 1, :n],
        "entity_pos": batch["entity_pos"][i : i + 1],
        "hts": batch["hts"][i : i + 1],
    }


@pytest.mark.parametrize("head_type", sorted(FAMILIES))
def test_forward_shapes_hts_order_and_batch_independence(head_type, tokenizer, short_batch):
    model = tiny_model(tokenizer, head_type, **sizes(head_type)).eval()
    n_pairs = [len(h) for h in short_batch["hts"]]
    with torch.no_grad():
        out = model(**short_batch)
        alone = [model(**_sub_batch(short_batch, i)).logits for i in range(len(n_pairs))]
    assert out.logits.shape == (sum(n_pairs), 97)
    assert out.pair_representations.shape[0] == sum(n_pairs)
    assert out.loss is not None and torch.isfinite(out.loss)
    # Each document's rows, in its hts order, are what it gets on its own: padding never leaks.
    assert torch.allclose(torch.cat(alone), out.logits, atol=1e-4)
    probs = model.relation_probabilities(out.logits)
    assert probs.shape == (sum(n_pairs), 96)
    clear = (probs - 0.5).abs() > 1e-4  # away from float ties at exactly 0.5
    uncapped = model.decode(out.logits, top_k=0)[:, 1:].bool()
    assert torch.equal(uncapped[clear], (probs > 0.5)[clear])  # decoding = the threshold class semantics


@pytest.mark.parametrize("head_type", sorted(FAMILIES))
def test_document_without_pairs_in_a_batch(head_type, tokenizer, short_batch):
    model = tiny_model(tokenizer, head_type, **sizes(head_type)).eval()
    batch = {k: v for k, v in short_batch.items() if k != "labels"}
    batch = {**batch, "entity_pos": [batch["entity_pos"][0][:1], *batch["entity_pos"][1:]], "hts": [[], *batch["hts"][1:]]}
    with torch.no_grad():
        out = model(**batch)
    assert out.logits.shape[0] == sum(len(h) for h in short_batch["hts"][1:])
    assert torch.isfinite(out.logits).all()


@pytest.mark.parametrize("head_type", sorted(FAMILIES))
def test_long_inputs_train_through_windowed_encoding(head_type, tokenizer, short_batch):
    model = tiny_model(tokenizer, head_type, max_positions=64, **sizes(head_type))
    assert short_batch["input_ids"].shape[1] > model.config.window  # documents span several windows
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    losses = []
    for _ in range(6):
        out = model(**short_batch)
        optimizer.zero_grad()
        out.loss.backward()
        optimizer.step()
        losses.append(out.loss.item())
    assert all(math.isfinite(x) for x in losses)
    assert losses[-1] < losses[0]
    assert model.encoder.embeddings.word_embeddings.weight.grad.abs().sum() > 0  # gradients reach the encoder


@pytest.mark.parametrize("head_type", sorted(FAMILIES))
def test_save_load_auto_model_and_from_encoder_pretrained(head_type, tokenizer, short_batch, tmp_path):
    model = tiny_model(tokenizer, head_type, **sizes(head_type)).eval()
    model.save_pretrained(tmp_path / "model")
    assert (tmp_path / "model" / "model.safetensors").exists()
    loaded = AutoModel.from_pretrained(tmp_path / "model").eval()
    assert type(loaded) is type(model)
    assert loaded.config.head_settings == model.config.head_settings
    with torch.no_grad():
        assert torch.equal(loaded(**short_batch).logits, model(**short_batch).logits)

    encoder = BertModel(model.config.encoder)
    encoder.save_pretrained(tmp_path / "encoder")
    cls, settings = FAMILIES[head_type]
    fresh = cls.from_encoder_pretrained(str(tmp_path / "encoder"), emb_size=64, block_size=16, head_settings=settings)
    assert type(fresh) is cls and fresh.config.head_type == head_type
    assert torch.equal(fresh.encoder.embeddings.word_embeddings.weight, encoder.embeddings.word_embeddings.weight)
    via_dispatcher = DocREModel.from_encoder_pretrained(
        str(tmp_path / "encoder"), head_type=head_type, emb_size=64, block_size=16, head_settings=settings
    )
    assert type(via_dispatcher) is cls
    with pytest.raises(ValueError, match="unknown to head_type"):
        cls.from_encoder_pretrained(str(tmp_path / "encoder"), emb_size=64, block_size=16, head_settings={"no_such_setting": 1})


def test_kd_docre_distillation_is_off_by_default_and_pulls_towards_the_teacher(tokenizer, short_batch):
    model = tiny_model(tokenizer, "kd_docre", **sizes("kd_docre"))
    teacher = torch.randn(short_batch["labels"].shape)
    with pytest.raises(ValueError, match="use_distillation"):
        model(**short_batch, teacher_logits=teacher)
    model = tiny_model(tokenizer, "kd_docre", **sizes("kd_docre", use_distillation=True, distillation_weight=2.0)).eval()
    with torch.no_grad():
        plain = model(**short_batch)
        both = model(**short_batch, teacher_logits=teacher)
    expected = plain.loss + 2.0 * torch.mean((plain.logits - teacher) ** 2)
    assert both.loss.item() == pytest.approx(expected.item(), rel=1e-5)
    batch = {k: v for k, v in short_batch.items() if k != "labels"}
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    gaps = []
    for _ in range(5):
        out = model(**batch, teacher_logits=teacher)  # distant data: the teacher's logits alone
        optimizer.zero_grad()
        out.loss.backward()
        optimizer.step()
        gaps.append(out.loss.item())
    assert gaps[-1] < gaps[0]


def test_docunet_similarity_channels(tokenizer, short_batch):
    model = tiny_model(tokenizer, "docunet", **sizes("docunet", channel_type="similarity", unet_in_channels=7))
    assert model.config.head_settings.unet_in_channels == 3  # similarity maps always have 3 channels
    out = model(**short_batch)
    out.loss.backward()
    assert model.channel_bilinear.weight.grad.abs().sum() > 0
    with pytest.raises(ValueError, match="channel_type"):
        tiny_model(tokenizer, "docunet", **sizes("docunet", channel_type="pixels"))


@pytest.mark.slow
@pytest.mark.parametrize("head_type", sorted(FAMILIES))
def test_each_family_overfits_real_documents(head_type, tokenizer, short_docs, short_batch):
    """Real learning: a tiny random model memorises four real Re-DocRED documents (F1 > 0.9)."""
    from envre_hf.metrics import score_predictions
    from envre_hf.models.prediction import predict

    model = tiny_model(tokenizer, head_type, **sizes(head_type))
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-3)
    first_f1 = f1 = None
    for step in range(1, 301):
        model.train()
        loss = model(**short_batch).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 20 == 0:
            model.eval()
            predictions = predict(model, short_docs, tokenizer, batch_size=4, progress=False)
            f1 = score_predictions(predictions, short_docs).f1
            first_f1 = f1 if first_f1 is None else first_f1
            if f1 > 0.9:
                break
    assert f1 > 0.9, f"{head_type}: F1 {f1:.3f} after {step} steps (first check {first_f1:.3f})"
    # The official result format, one row per predicted (pair, relation), relation ids from the schema.
    schema = docred_schema()
    titles = {d.title: d for d in short_docs}
    assert predictions and all(set(row) == {"title", "h_idx", "t_idx", "r", "evidence"} for row in predictions)
    assert all(row["r"] in schema and row["h_idx"] != row["t_idx"] for row in predictions)
    assert all(row["h_idx"] < titles[row["title"]].num_entities for row in predictions)
