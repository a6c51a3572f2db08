"""DocRED-style tokenization of new names."""

from __future__ import annotations

import pytest

from envre_hf.documents.tokenize import joined_name, name_key, tokenize_name


@pytest.mark.parametrize(
    ("name", "tokens"),
    [
        ("US$90 million", ["US$", "90", "million"]),
        ("$71 million", ["$", "71", "million"]),
        ("November 29, 2007", ["November", "29", ",", "2007"]),
        ("63.93%", ["63.93", "%"]),
        ("10,000", ["10,000"]),
        ("Zimbabwe African People's Union", ["Zimbabwe", "African", "People", "'s", "Union"]),
        ("Cleanin' Out My Closet", ["Cleanin", "'", "Out", "My", "Closet"]),
        ("Jean-Baptiste Mondino", ["Jean", "-", "Baptiste", "Mondino"]),
        ("V/Line", ["V", "/", "Line"]),
        ("M-52", ["M-52"]),
        ("mid-1990s", ["mid-1990s"]),
        ("Washington, D.C.", ["Washington", ",", "D.C."]),
        ("Sony Music (Japan)", ["Sony", "Music", "(", "Japan", ")"]),
        ("U.S. Army", ["U.S.", "Army"]),
        ("Warner Bros. Inc.", ["Warner", "Bros.", "Inc."]),
        ("O'Connor", ["O'Connor"]),
        ("Don't Stop", ["Do", "n't", "Stop"]),
        ('"Heroes"', ['"', "Heroes", '"']),
        ("Star Wars: Episode I", ["Star", "Wars", ":", "Episode", "I"]),
        ("Bob\xa0Carr", ["Bob", "Carr"]),
        ("  ", []),
    ],
)
def test_tokenize_examples(name, tokens):
    assert tokenize_name(name) == tokens


def test_tokenizer_reproduces_real_mention_tokens(redocred_test):
    """The tokens of real mention names are reproduced (misses are mostly DocRED's \\xa0 tokens)."""
    total = same = 0
    for doc in redocred_test:
        for entity in doc.entities:
            for mention in entity.mentions:
                total += 1
                same += tokenize_name(mention.name) == mention.tokens(doc.sents)
    assert same / total > 0.99


def test_joined_name_and_key():
    assert joined_name("Washington, D.C.") == "Washington , D.C."
    assert name_key("Washington, D.C.") == name_key("washington ,  d.c.") == "washington , d.c."
    assert name_key("Jean-Baptiste") != name_key("Jean Baptiste")
