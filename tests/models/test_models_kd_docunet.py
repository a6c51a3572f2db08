"""KD-DocRE and DocuNet: pair-matrix machinery, losses, and the full models on tiny random encoders."""

from __future__ import annotations

import math

import pytest
import torch

from envre_hf.models.losses_kd_docunet import adaptive_focal_loss, balanced_loss, distillation_loss
from envre_hf.models.modeling_docre import threshold_decode
from envre_hf.models.modeling_docunet import PairUNet
from envre_hf.models.modeling_kd_docre import AxialLayer
from envre_hf.models.pair_matrix import PairGrid


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


def _multilabel_categorical_reference(logits: torch.Tensor, labels: torch.Tensor) -> float:
    """DocuNet's released loss, term by term: every class (0 included) a target or not, threshold 0."""
    total = 0.0
    for row, lab in zip(logits.tolist(), labels.tolist()):
        total += math.log(1 + sum(math.exp(-s) for s, y in zip(row, lab) if y > 0))
        total += math.log(1 + sum(math.exp(s) for s, y in zip(row, lab) if y == 0))
    return total / len(logits)


@pytest.mark.parametrize("weight", ["released", "paper"])
@pytest.mark.parametrize("gamma", [0.0, 1.0, 2.0])
def test_adaptive_focal_loss_matches_its_definition(gamma, weight):
    torch.manual_seed(0)
    logits = torch.randn(5, 6) * 2
    labels = _labels([[0], [1, 3], [2], [0], [1, 2, 5]])
    got = adaptive_focal_loss(logits, labels, gamma=gamma, weight=weight).item()
    assert got == pytest.approx(_afl_reference(logits, labels, gamma, weight), rel=1e-5)


def test_adaptive_focal_loss_self_pairs_are_rows_of_zero_logits():
    """KD-DocRE's released mean runs over the pair matrix's diagonal too: all-zero logits, no relation."""
    torch.manual_seed(0)
    logits = torch.randn(5, 6) * 2
    labels = _labels([[0], [1, 3], [2], [0], [1, 2, 5]])
    with_rows = adaptive_focal_loss(torch.cat([logits, torch.zeros(3, 6)]), torch.cat([labels, _labels([[0]] * 3)]))
    assert adaptive_focal_loss(logits, labels, self_pairs=3).item() == pytest.approx(with_rows.item(), rel=1e-6)
    assert adaptive_focal_loss(logits, labels, self_pairs=3).item() < adaptive_focal_loss(logits, labels).item()


def test_adaptive_focal_loss_defaults_to_the_released_weight():
    """One positive at margin 0 (p = 1/2), gamma 1: the released weight is 1 + 1/2, the paper's 1/2."""
    logits = torch.tensor([[0.0, 0.0, -50.0]])
    labels = _labels([[1]], num_classes=3)
    negative = math.log(1 + math.exp(-50.0))  # the threshold against the one negative
    assert adaptive_focal_loss(logits, labels).item() == pytest.approx(1.5 * math.log(2) + negative, rel=1e-6)
    assert adaptive_focal_loss(logits, labels, weight="paper").item() == pytest.approx(0.5 * math.log(2) + negative, rel=1e-6)


def test_balanced_loss_is_the_released_multilabel_categorical_cross_entropy():
    torch.manual_seed(1)
    logits = torch.randn(5, 6) * 2
    labels = _labels([[0], [1, 3], [2], [0], [1, 2, 5]])
    assert balanced_loss(logits, labels).item() == pytest.approx(_multilabel_categorical_reference(logits, labels), rel=1e-5)
    # class 0 is an ordinary target: its logit is pushed above 0 for a pair without relation, below 0 otherwise
    zero = torch.zeros(2, 6, requires_grad=True)
    balanced_loss(zero, _labels([[0], [3]])).backward()
    assert zero.grad[0, 0] < 0 and zero.grad[1, 0] > 0


@pytest.mark.parametrize("loss_fn, threshold", [(adaptive_focal_loss, "class0"), (balanced_loss, "zero")])
def test_losses_push_positives_above_and_negatives_below_the_threshold(loss_fn, threshold):
    logits = torch.zeros(2, 6, requires_grad=True)
    labels = _labels([[2, 4], [0]])
    loss_fn(logits, labels).backward()
    grad = logits.grad
    assert (grad[0, [2, 4]] < 0).all()  # descent raises positive relations
    assert (grad[0, [1, 3, 5]] > 0).all()  # and lowers negative ones
    assert (grad[1, 1:] > 0).all() and grad[1, 0] < 0  # no-relation pair: threshold / none class on top
    # A pair decoded right with large margins costs (almost) nothing.
    none = 0.0 if threshold == "class0" else 20.0
    good = torch.tensor([[-none, -20, 20, -20, 20, -20], [none, -20, -20, -20, -20, -20]])
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
    assert distillation_loss(student, teacher, self_pairs=2).item() == pytest.approx((1 + 4) / 8)
    loss.backward()
    assert teacher.grad is None  # the teacher is never trained through the student's loss
    with pytest.raises(ValueError, match="teacher_logits"):
        distillation_loss(student, teacher[:1])
    with pytest.raises(ValueError, match="pairs x classes"):
        adaptive_focal_loss(torch.zeros(3, 4), torch.zeros(3, 5))


def test_docunet_decoding_fixed_threshold_and_the_none_class_in_the_top_k():
    """DocuNet's released rule: r where logit_r > 0, among the top k of all classes, class 0 included."""
    logits = torch.tensor([[5.0, 6.0, 4.0, 3.0, -1.0], [-2.0, 1.0, 0.5, -0.5, 2.0]])
    assert threshold_decode(logits, top_k=3, fixed_threshold=True).tolist() == [[0, 1, 1, 0, 0], [0, 1, 1, 0, 1]]
    assert threshold_decode(logits, top_k=2, fixed_threshold=True).tolist() == [[0, 1, 0, 0, 0], [0, 1, 0, 0, 1]]
    # the class-0 threshold (ATLOP and after): r where logit_r > logit_0, the top k among the relations
    assert threshold_decode(logits, top_k=3).tolist() == [[0, 1, 0, 0, 0], [0, 1, 1, 0, 1]]
    assert threshold_decode(logits, top_k=1).tolist() == [[0, 1, 0, 0, 0], [0, 0, 0, 0, 1]]


# ----------------------------------------------------------------------------- pair matrix


def _all_pairs(n: int) -> list[list[int]]:
    return [[h, t] for h in range(n) for t in range(n) if h != t]


def test_pair_grid_cells_stack_and_gather():
    grid = PairGrid.build([3, 1, 2], matrix_size=4)
    assert grid.sides == [4, 4, 4] and grid.groups() == {4: [0, 1, 2]}
    assert PairGrid.build([3, 45], matrix_size=42).groups() == {42: [0], 45: [1]}  # past 42: its own side
    assert PairGrid.build([3, 1], matrix_size=None).sides == [3, 1]
    heads, tails, docs = grid.cells("cpu")
    assert heads.tolist()[:9] == [0, 0, 0, 1, 1, 1, 2, 2, 2] and tails.tolist()[:9] == [0, 1, 2] * 3
    assert heads.tolist()[9:] == [3, 4, 4, 5, 5] and docs.tolist() == [0] * 9 + [1] + [2] * 4
    cells = torch.arange(14, dtype=torch.float).unsqueeze(-1)
    stacked = grid.stack(cells, 4, [0, 1, 2], torch.tensor([-1.0]))
    assert stacked.shape == (3, 4, 4, 1) and stacked[0, 1, 2, 0] == 5 and stacked[0, 3, 0, 0] == -1
    repeated = grid.stack_repeating(cells, 4, [0, 2])
    assert repeated[0, 3, 1, 0] == cells[2 * 3 + 1] and repeated[1, 3, 3, 0] == cells[10 + 3]  # the last entity again
    hts = [_all_pairs(3), [], _all_pairs(2)]
    picked = grid.gather({4: stacked}, hts, cells.new_zeros(0, 1))
    assert picked.squeeze(-1).tolist() == [1, 2, 3, 5, 6, 7, 11, 12]
    assert int(grid.valid_cells(4, [0, 1, 2], "cpu").sum()) == 6 + 0 + 2
    with pytest.raises(ValueError, match="document 2"):
        grid.gather({4: stacked}, [[], [], [[0, 2]]], cells.new_zeros(0, 1))


def test_pair_unet_is_the_released_shape_at_any_side():
    torch.manual_seed(0)
    unet = PairUNet(in_channels=3, out_channels=4, down_channels=8).eval()
    widths = [m.out_channels for m in unet.modules() if isinstance(m, torch.nn.Conv2d)]
    assert widths == [8, 8, 16, 16, 16, 16, 8, 8, 4, 4, 4]  # d, 2d, 2d, then 4d -> d, 2d -> d/2, out
    assert sum(isinstance(m, torch.nn.BatchNorm2d) for m in unet.modules()) == 10
    for n in (4, 5, 10, 42, 45):
        assert unet(torch.randn(2, 3, n, n)).shape == (2, 4, n, n)
    # Two poolings widen what a cell sees to the pairs some ten entities away, no further.
    x = torch.randn(1, 3, 42, 42)
    x2 = x.clone()
    x2[..., 11, 11] += 10
    assert (unet(x2) - unet(x))[..., 0, 0].abs().max() > 0
    assert (unet(x2) - unet(x))[..., 41, 41].abs().max() == 0


def test_axial_layers_reason_in_two_hops():
    torch.manual_seed(0)
    n, dim = 4, 8
    x = torch.randn(1, n, n, dim)
    one, two = AxialLayer(dim, 2, 0.0).eval(), AxialLayer(dim, 2, 0.0).eval()

    def moved(cell, layers):
        y = x.clone()
        y[0, cell[0], cell[1]] += 3.0
        out, base = y, x
        for layer in layers:
            out, base = layer(out, None), layer(base, None)
        return not torch.allclose(out[0, 0, 1], base[0, 0, 1])

    assert moved((0, 2), [one]) and moved((2, 1), [one])  # same row, same column
    assert not moved((2, 3), [one])  # neither: out of reach in one hop
    assert moved((2, 3), [one, two])


# ----------------------------------------------------------------------------- full models


from _training_helpers import tiny_model  # noqa: E402
from transformers import AutoModel, BertModel  # noqa: E402

from envre_hf.documents import docred_schema  # noqa: E402
from envre_hf.features import DocRECollator, featurize_document  # noqa: E402
from envre_hf.models import DocREModel, DocuNetModel, KDDocREModel  # noqa: E402

FAMILIES = {
    # Tiny heads: small U-Net / axial stack, no dropout so that training runs are deterministic.
    "kd_docre": (KDDocREModel, {"axial_heads": 4, "axial_layers": 2, "pair_dim": 64}),
    "docunet": (DocuNetModel, {"unet_down_channels": 8, "unet_out_channels": 16}),
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
    assert model.encoder.transformer.embeddings.word_embeddings.weight.grad.abs().sum() > 0  # gradients reach the encoder


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
    assert torch.equal(fresh.encoder.transformer.embeddings.word_embeddings.weight, encoder.embeddings.word_embeddings.weight)
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
    self_pairs = sum(len(e) for e in short_batch["entity_pos"])  # the released mean's diagonal rows
    expected = plain.loss + 2.0 * ((plain.logits - teacher) ** 2).sum() / ((len(teacher) + self_pairs) * 97)
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


def _entities(batch: dict, i: int, n: int) -> dict:
    """Document ``i`` of ``batch`` alone, read as ``n`` one-mention entities at its first ``n`` token positions."""
    length = int(batch["attention_mask"][i].sum())
    assert length > n + 2
    return {
        "input_ids": batch["input_ids"][i : i + 1, :length],
        "attention_mask": batch["attention_mask"][i : i + 1, :length],
        "entity_pos": [[[(p, p + 1)] for p in range(1, n + 1)]],
        "hts": [_all_pairs(n)],
    }


@pytest.mark.parametrize("head_type", sorted(FAMILIES))
def test_more_entities_than_the_released_42_extend_the_matrix(head_type, tokenizer, short_batch):
    """The released matrix is 42 wide; a 45-entity document gets a 45-wide one, and its logits do not depend on
    being batched with a small document (which keeps its 42-wide matrix)."""
    model = tiny_model(tokenizer, head_type, **sizes(head_type)).eval()
    big, small = _entities(short_batch, 0, 45), _entities(short_batch, 1, 5)
    width = max(big["input_ids"].shape[1], small["input_ids"].shape[1])
    pad = lambda x: torch.nn.functional.pad(x, (0, width - x.shape[1]))  # noqa: E731
    both = {"input_ids": torch.cat([pad(big["input_ids"]), pad(small["input_ids"])]),
            "attention_mask": torch.cat([pad(big["attention_mask"]), pad(small["attention_mask"])]),
            "entity_pos": big["entity_pos"] + small["entity_pos"], "hts": big["hts"] + small["hts"]}
    with torch.no_grad():
        alone = torch.cat([model(**big).logits, model(**small).logits])
        batched = model(**both).logits
    assert batched.shape == (45 * 44 + 5 * 4, 97)
    assert torch.allclose(alone, batched, atol=1e-4)


def test_kd_docre_padding_cells_and_masked_variant(tokenizer, short_batch):
    """Released: the cells past a document's entities hold the projection of the extractors' biases at prediction
    (zero in training, the released training loop's negative mask) and take part in axial attention, so the matrix
    width changes the logits; ``mask_cells`` keeps attention among the document's pairs, where the width does not."""
    doc = _sub_batch(short_batch, 0)
    n = len(doc["entity_pos"][0])
    assert n < 42

    def logits(**settings):
        torch.manual_seed(0)
        model = tiny_model(tokenizer, "kd_docre", **sizes("kd_docre", **settings)).eval()
        with torch.no_grad():
            return model(**doc).logits

    assert not torch.allclose(logits(), logits(matrix_size=None), atol=1e-4)
    assert torch.allclose(logits(mask_cells=True), logits(mask_cells=True, matrix_size=None), atol=1e-5)
    torch.manual_seed(0)
    model = tiny_model(tokenizer, "kd_docre", **sizes("kd_docre"))
    cells = torch.randn(3, model.projection.out_features)
    assert not model.eval()._padding_cell(cells).eq(0).all() and model.train()._padding_cell(cells).eq(0).all()


def test_kd_docre_loss_averages_over_the_self_pairs_as_released(tokenizer, short_batch):
    torch.manual_seed(0)
    model = tiny_model(tokenizer, "kd_docre", **sizes("kd_docre")).eval()
    with torch.no_grad():
        out = model(**short_batch)
    self_pairs = sum(len(e) for e in short_batch["entity_pos"])
    expected = adaptive_focal_loss(out.logits, short_batch["labels"], self_pairs=self_pairs)
    assert out.loss.item() == pytest.approx(expected.item(), rel=1e-6)
    model.config.head_settings.afl_self_pairs = False
    with torch.no_grad():
        assert model(**short_batch).loss.item() == pytest.approx(adaptive_focal_loss(out.logits, short_batch["labels"]).item(), rel=1e-6)


@pytest.mark.parametrize("head_type, emb_size, top_k, tensors", [("kd_docre", 1024, 4, 79), ("docunet", 768, 3, 50)])
def test_released_defaults(head_type, emb_size, top_k, tensors, tokenizer):
    """With default settings a family is its original's size: the issue's counts on MiniLM (34.8 M / 18.3 M there)."""
    from envre_hf.models import DocREConfig

    config = DocREConfig(encoder=tiny_model(tokenizer, "atlop").config.encoder.to_dict(), head_type=head_type)
    assert (config.emb_size, config.top_k, config.head_initialization) == (emb_size, top_k, "pytorch")
    model = DocREModel(config)
    head = [(n, p) for n, p in model.named_parameters() if not n.startswith("encoder.")]
    assert len(head) == tensors
    if head_type == "kd_docre":
        assert len(model.axial) == 6 and model.config.head_settings.matrix_size == 42
    else:
        assert sum(isinstance(m, torch.nn.BatchNorm2d) for m in model.modules()) == 10
