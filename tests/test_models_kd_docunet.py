"""KD-DocRE and DocuNet: pair-matrix machinery, losses, and the full models on tiny random encoders."""

from __future__ import annotations

import math

import pytest
import torch

from envre_hf.models.losses_kd_docunet import adaptive_focal_loss, balanced_threshold_loss, distillation_loss
from envre_hf.models.pair_matrix import AxialTransformer, PairIndex, PairUNet


def _labels(rows: list[list[int]], num_classes: int = 6) -> torch.Tensor:
    out = torch.zeros(len(rows), num_classes)
    for i, row in enumerate(rows):
        for r in row:
            out[i, r] = 1
    return out


# ----------------------------------------------------------------------------- losses


def _afl_reference(logits: torch.Tensor, labels: torch.Tensor, gamma: float) -> float:
    total = 0.0
    for row, lab in zip(logits.tolist(), labels.tolist()):
        th = row[0]
        pos = [r for r in range(1, len(row)) if lab[r] > 0]
        neg = [r for r in range(1, len(row)) if lab[r] == 0]
        for r in pos:
            p = math.exp(row[r]) / (math.exp(row[r]) + math.exp(th))
            total += -((1 - p) ** gamma) * math.log(p)
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


@pytest.mark.parametrize("gamma", [0.0, 1.0, 2.0])
def test_adaptive_focal_loss_matches_its_definition(gamma):
    torch.manual_seed(0)
    logits = torch.randn(5, 6) * 2
    labels = _labels([[0], [1, 3], [2], [0], [1, 2, 5]])
    got = adaptive_focal_loss(logits, labels, gamma=gamma).item()
    assert got == pytest.approx(_afl_reference(logits, labels, gamma), rel=1e-5)


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
    labels = _labels([[1], [1]])
    easy_hard = torch.tensor([[0.0, 3.0, -9, -9, -9, -9], [0.0, -3.0, -9, -9, -9, -9]], requires_grad=True)
    adaptive_focal_loss(easy_hard, labels, gamma=2.0).backward()
    with_focus = easy_hard.grad[:, 1].abs()
    easy_hard.grad = None
    adaptive_focal_loss(easy_hard, labels, gamma=0.0).backward()
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
    assert index.size == (3, 3)
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
