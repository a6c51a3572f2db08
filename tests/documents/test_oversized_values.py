"""Oversized values in a file option are one line naming the file (and document), never Python's own text."""

from __future__ import annotations

import json

import pytest

from envre_hf.cli.common import UsageError, error_message, model_location
from envre_hf.documents import DocumentError, read_documents
from envre_hf.documents.io import parse_yaml
from envre_hf.metrics.docre import read_predictions

HUGE = "9" * 1_000_000


def test_a_million_digit_integer_in_documents_names_the_file_and_document(tmp_path):
    good = {"title": "a", "sents": [["x"]], "vertexSet": [[{"name": "x", "pos": [0, 1], "sent_id": 0, "type": "LOC"}]],
            "labels": []}
    path = tmp_path / "docs.json"
    path.write_text("[" + json.dumps(good) + ', {"title": "b", "seed": ' + HUGE + "}]")
    with pytest.raises(DocumentError) as info:
        read_documents(path)
    message = error_message(info.value)
    assert str(path) in message and "document 1" in message and "too long" in message and "set_int_max" not in message


@pytest.mark.parametrize("text", ['[{"title": "t", "h_idx": ' + HUGE + "}]", "[" * 100_000 + "]" * 100_000],
                         ids=["huge-int", "deep"])
def test_predictions_with_oversized_values_name_the_file(tmp_path, text):
    path = tmp_path / "preds.json"
    path.write_text(text)
    with pytest.raises(ValueError) as info:
        read_predictions(path)
    message = error_message(info.value)
    assert message.startswith(str(path)) and ("too long" in message or "too deeply" in message)


def test_a_model_config_with_a_huge_number_is_refused_naming_it(tmp_path):
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text('{"hidden_size": ' + HUGE + "}")
    with pytest.raises(DocumentError, match=r"m/config.json: a number too long"):
        model_location(tmp_path / "m")


def test_yaml_aliases_are_refused_in_settings(tmp_path):
    bomb = "a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: [*b, *b, *b]\n"
    with pytest.raises(DocumentError, match=r"train.yaml: YAML alias \*a at line 2"):
        parse_yaml(bomb, "train.yaml")
    assert parse_yaml("rename_kb_pool: [a.json, b.json]\n", "train.yaml") == {"rename_kb_pool": ["a.json", "b.json"]}
    with pytest.raises(UsageError):
        raise UsageError("x")  # (the CLI prints DocumentError and UsageError alike: one line, exit 2)
