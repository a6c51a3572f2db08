"""Raw text -> documents: segmentation that keeps character spans, the alias rules, the TIME / NUM rules."""

from __future__ import annotations

import pytest

from envre_hf.documents.aliases import cluster_by_aliases, cluster_by_exact_name, normalised_words

pytest.importorskip("spacy")


@pytest.mark.parametrize(
    "names, types, expected",
    [
        (["Barack Obama", "Obama", "Michelle Obama"], ["PER"] * 3, [[0, 1], [2]]),  # the last full name before it
        (["General Agreement on Tariffs and Trade", "GATT", "the GATT"], ["ORG"] * 3, [[0, 1, 2]]),
        (["United States", "U.S.", "US", "the United States"], ["LOC"] * 4, [[0, 1, 2, 3]]),
        (["United States Navy", "Navy", "TAM Airlines", "TAM"], ["ORG"] * 4, [[0, 1], [2, 3]]),
        (["Albemarle County", "Albemarle"], ["LOC"] * 2, [[0], [1]]),  # places keep their full names
        (["Obama", "Obama"], ["PER", "LOC"], [[0], [1]]),  # never across types
        (["Henri Guédon", "Henri Guedon", "Drossinis’", "Drossinis"], ["PER"] * 4, [[0, 1], [2, 3]]),
        (["June 20 , 1949", "1949"], ["TIME"] * 2, [[0], [1]]),
    ],
)
def test_alias_rules(names, types, expected):
    assert cluster_by_aliases(names, types) == expected


def test_exact_names_and_normalisation():
    assert cluster_by_exact_name(["Paris", "Paris", "paris"], ["LOC"] * 3) == [[0, 1], [2]]
    assert normalised_words("The  Beatles’") == ("beatles",) and normalised_words("São-Paulo") == ("sao", "paulo")


def test_a_mention_across_a_sentence_break_merges_the_sentences_and_words_are_cut_at_spans():
    from envre_hf.documents.text import segment, text_document

    text = "He met Dr. No. Smith left. U.S.-based firms grew."
    assert [text[a:b] for a, b in segment(text).sentence_spans()] == ["He met Dr. No.", "Smith left.", "U.S.-based firms grew."]
    start, us = text.index("No. Smith"), text.index("U.S.")
    doc = text_document(text, [[(start, start + 9)], [(us, us + 4)]], ["PER", "LOC"])
    assert doc.sents == [["He", "met", "Dr.", "No", ".", "Smith", "left", "."], ["U.S.", "-based", "firms", "grew", "."]]
    assert doc.entities[0].mentions[0].tokens(doc.sents) == ["No", ".", "Smith"]
    assert doc.entities[1].mentions[0].tokens(doc.sents) == ["U.S."]


def test_time_and_number_rules():
    from envre_hf.documents.text import rule_mentions

    text = "On March 25, 2010 and in 1990s, 10,000 people (five of them born 12 May 1968) may leave in March."
    found = [(text[s:e], t) for s, e, t in rule_mentions(text)]
    assert found == [("March 25, 2010", "TIME"), ("1990s", "TIME"), ("10,000", "NUM"), ("five", "NUM"),
                     ("12 May 1968", "TIME")]
