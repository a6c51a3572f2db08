"""Long documents in memory linear in their length: no tensor of a model's prediction grows faster than the document
(the windows' attention is never assembled into a length x length or mentions x length matrix). Measured as the
largest tensor any torch function returns, for documents of L and 4 L tokens with mentions all along them; the
figures on real text are benchmarks/bench_long_documents.py's."""

from __future__ import annotations

import pytest
import torch
from torch.overrides import TorchFunctionMode

from _training_helpers import tiny_model

from envre_hf.models.prediction import iter_logits


class LargestTensor(TorchFunctionMode):
    """The most elements of any tensor a torch function returns inside the block."""

    def __init__(self):
        super().__init__()
        self.most = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for value in out if isinstance(out, (tuple, list)) else (out,):
            if isinstance(value, torch.Tensor):
                self.most = max(self.most, value.numel())
        return out


def _feature(length: int, entities: int = 6) -> dict:
    """A document of ``length`` word pieces, a mention every 4 tokens, its entities' mentions spread all along it."""
    generator = torch.Generator().manual_seed(length)
    ids = [1, *torch.randint(5, 90, (length - 2,), generator=generator).tolist(), 2]
    entity_pos = [[] for _ in range(entities)]
    for k, start in enumerate(range(4, length - 4, 4)):
        entity_pos[k % entities].append((start, start + 2))
    hts = [[h, t] for h in range(entities) for t in range(entities) if h != t]
    return {"input_ids": ids, "entity_pos": entity_pos, "hts": hts}


@pytest.mark.parametrize("family", ["atlop", "kd_docre", "docunet"])
def test_prediction_memory_grows_linearly_with_document_length(family):
    model = tiny_model(96, family, max_positions=64)
    largest, logits = {}, {}
    for length in (1000, 4000):
        with LargestTensor() as mode:
            logits[length] = dict(iter_logits(model, [_feature(length)], pad_token_id=0, progress=False))[0]
        largest[length] = mode.most
        mentions = sum(len(m) for m in _feature(length)["entity_pos"])
        assert mode.most < mentions * length  # never a mentions x length row, let alone length x length
    assert largest[4000] <= 4.5 * largest[1000], largest
    assert all(torch.isfinite(x).all() and x.shape == (30, 97) for x in logits.values())
