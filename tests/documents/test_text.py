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


# --------------------------------------------------------------------------- spans exactly as given (issue 44)

#: (text, mention, the token just before it, the token just after it): mentions glued to punctuation or to the word
#: before or after them. A mapping one word early or late gives other tokens or another neighbour.
GLUED = [
    ("He lived in (Paris) then.", "Paris", "(", ")"),
    ("The pre-Obama era ended.", "Obama", "-", "era"),
    ("A U.S.-based firm grew.", "U.S.", "A", "-based"),
    ('He said"Obama" twice.', "Obama", 'said"', '"'),
    ("Visit Paris,France now.", "France", ",", "now"),
    ("Labs of NewYork-based firms.", "York", "New", "-"),
    ("The anti-NATO,pro-EU camps.", "EU", "-", "camps"),
    ("«Berlin» is big.", "Berlin", "«", "»"),
    ("Obama's wife left.", "Obama", None, "'s"),
    ("Mail x@Google.com today.", "Google", "x@", ".com"),
    ("Trains Zürich/Genève run.", "Genève", "/", "run"),
    ("The (New York) office.", "New York", "(", ")"),
    ("Founded by Jobs-Wozniak.", "Jobs-Wozniak", "by", "."),
    ("It was 1990s-era music.", "1990s", "was", "-"),
    ("Born in (1968) there.", "1968", "(", ")"),
]


def _neighbours(doc, mention):
    sent = doc.sents[mention.sent_id]
    start, end = mention.pos
    return (sent[start - 1] if start > 0 else None), (sent[end] if end < len(sent) else None)


@pytest.mark.parametrize("text, name, before, after", GLUED)
def test_a_glued_mention_maps_to_exactly_its_characters(text, name, before, after):
    from envre_hf.documents.text import text_document

    start = text.index(name)
    doc = text_document(text, [[(start, start + len(name))]], ["MISC"])
    mention = doc.entities[0].mentions[0]
    assert "".join(mention.tokens(doc.sents)) == name.replace(" ", "") and mention.name == name
    assert _neighbours(doc, mention) == (before, after)
    assert "".join(t for sent in doc.sents for t in sent) == "".join(text.split())  # every character once, in order


def test_glued_mentions_of_one_text_by_entities_and_by_mentions_pin_their_token_positions():
    """The two character-span inputs of the pipeline: each mention's (sentence, first token, end token) pinned."""
    from envre_hf.models.pipeline_docre import prepare

    text = 'In the pre-Obama era (Paris) grew. Then U.S.-based firms said"Clinton" and NewYork-based labs left.'
    names = ["Obama", "Paris", "U.S.", "Clinton", "York"]
    spans = [[text.index(n), text.index(n) + len(n)] for n in names]
    types = ["PER", "LOC", "LOC", "PER", "LOC"]
    expected = [(0, 4, 5), (0, 7, 8), (1, 1, 2), (1, 5, 6), (1, 9, 10)]
    given = prepare({"text": text, "entities": [{"mentions": [s], "type": t} for s, t in zip(spans, types)]})
    found = prepare({"text": text, "mentions": [{"span": s, "type": t} for s, t in zip(spans, types)]}, cluster="exact")
    for prepared in (given, found):
        doc = prepared.document
        assert [(m.sent_id, *m.pos) for e in doc.entities for m in e.mentions] == expected
        assert [m.tokens(doc.sents) for e in doc.entities for m in e.mentions] == [[n] for n in names]
        assert prepared.spans == [[s] for s in spans]  # the output names the input's characters


def test_mentions_found_by_ner_and_rules_in_glued_text_keep_their_characters(tmp_path):
    """The raw-text route: the NER model's offsets (sentence by sentence) and the TIME / NUM rules."""
    from _pipeline_helpers import save_tiny_ner

    from envre_hf.models.pipeline_docre import NERTagger, prepare

    ner = NERTagger(str(save_tiny_ner(tmp_path / "ner")))
    text = 'Talks ran late. Then pre-Obama (Paris) aides said"Clinton" in 1990s-era France,Paris (1968).'
    found = [(text[s:e], t) for s, e, t in ner(text)]
    assert found == [("Obama", "PER"), ("Paris", "LOC"), ("Clinton", "PER"), ("1990s", "TIME"), ("France", "LOC"),
                     ("Paris", "LOC"), ("1968", "TIME")]
    prepared = prepare(text, ner, cluster="exact")
    doc = prepared.document
    tokens = {text[s:e]: (doc.sents[m.sent_id][m.pos[0] - 1], m.tokens(doc.sents))
              for e, spans in zip(doc.entities, prepared.spans) for m, (s, e) in zip(e.mentions, spans)}
    assert tokens == {"Obama": ("-", ["Obama"]), "Paris": (",", ["Paris"]), "Clinton": ('said"', ["Clinton"]),
                      "1990s": ("in", ["1990s"]), "France": ("era", ["France"]), "1968": ("(", ["1968"])}
