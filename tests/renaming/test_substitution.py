"""Span replacement: the position map, its refusals, and Re-DocRED's ``global_pos`` conventions."""

from __future__ import annotations

import pytest

from envre_hf.documents import Document, Entity, Mention
from envre_hf.renaming.substitution import SpanOverlapError, SpanReplacement, replace_spans, substitute

SENTS = ["a b c d e f g h".split(), "i j k".split()]


def _rep(sent, start, end, *tokens):
    return SpanReplacement(sent, start, end, tuple(tokens))


def test_spans_after_a_replacement_shift_by_its_length_change():
    new, spans = replace_spans(SENTS, [_rep(0, 1, 3, "X"), _rep(0, 5, 6, "Y", "Z", "W")])
    assert new[0] == "a X d e Y Z W g h".split() and new[1] is SENTS[1]  # untouched sentences are shared
    assert spans.remap(0, 1, 3) == (1, 2)  # the replaced span itself
    assert spans.remap(0, 3, 5) == (2, 4)  # between the two: shifted by -1
    assert spans.remap(0, 6, 8) == (7, 9)  # after both: -1 + 2
    assert spans.remap(0, 0, 1) == (0, 1) and spans.remap(1, 0, 2) == (0, 2)


@pytest.mark.parametrize(
    "span",
    [
        (2, 4),  # starts inside the first replacement
        (3, 6),  # ends inside the second replacement, which starts after it
        (0, 2),  # ends inside the first replacement
    ],
)
def test_a_span_partially_overlapping_a_replacement_is_refused(span):
    _, spans = replace_spans(SENTS, [_rep(0, 1, 3, "X"), _rep(0, 5, 6, "Y")])
    with pytest.raises(SpanOverlapError, match=r"overlaps \[(1, 3|5, 6)\)"):
        spans.remap(0, *span)


def test_overlapping_different_replacements_are_refused_identical_ones_merged():
    with pytest.raises(SpanOverlapError, match="overlap at token 2 of sentence 0"):
        replace_spans(SENTS, [_rep(0, 1, 3, "X"), _rep(0, 2, 4, "Y")])
    with pytest.raises(SpanOverlapError, match="two different replacements"):
        replace_spans(SENTS, [_rep(0, 1, 3, "X"), _rep(0, 1, 3, "Y")])
    new, _ = replace_spans(SENTS, [_rep(0, 1, 3, "X"), _rep(0, 1, 3, "X")])
    assert new[0] == "a X d e f g h".split()


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ([5, 5], [4, 4]),  # Re-DocRED: both entries hold the document-level start
        ([5, 6], [4, 5]),  # inclusive end
        ([5, 7], [4, 6]),  # exclusive end
    ],
)
def test_global_pos_moves_with_its_mention_in_each_convention(old, new):
    # mention "f g" (sentence 0, tokens 5-7; document positions 5-7) after "b c" -> "X"
    doc = Document("t", [list(s) for s in SENTS], [Entity([Mention("f g", 0, (5, 7), "PER", {"global_pos": old})])])
    out = substitute(doc, [_rep(0, 1, 3, "X")])
    mention = out.entities[0].mentions[0]
    assert mention.tokens(out.sents) == ["f", "g"] and mention.pos == (4, 6)
    assert mention.extra["global_pos"] == new


def test_global_pos_of_an_unknown_convention_is_dropped_and_kept_when_nothing_changes():
    doc = Document("t", [list(s) for s in SENTS], [Entity([Mention("f g", 0, (5, 7), "PER", {"global_pos": [0, 9]})])])
    out = substitute(doc, [_rep(0, 1, 3, "X")])
    assert "global_pos" not in out.entities[0].mentions[0].extra
    assert doc.entities[0].mentions[0].extra["global_pos"] == [0, 9]  # the input is not modified
    same = substitute(doc, [])
    assert same.entities[0].mentions[0].extra["global_pos"] == [0, 9]
