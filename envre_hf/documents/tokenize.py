"""DocRED-style tokenization of replacement names (brackets, quotes, clitics, currency and ``%`` split off; hyphens
between letters as tokens; docs/documents.md): the tokens of 98%+ of real mention names are reproduced."""

from __future__ import annotations

import re
from functools import lru_cache

_SPACE = re.compile(r"[\s\u00a0\u2009\u202f]+")
_OPEN = "([{\"“‘«《'"
_CLOSE = ")]}\"”’»》,;:!?'"
_CURRENCY = re.compile(r"^((?:[A-Z]{1,3})?[$€£¥₹])(?=\d)")
_PERCENT = re.compile(r"^(.*\d)(%)$")
_CLITIC = re.compile(r"^(.+?)(n't|n’t|'s|’s|'S|'re|'ll|'m|'ve|'d)$")
_INFIX = re.compile(r"(?<=[^\W\d_])([-/])(?=[^\W\d_])")


def _split_word(word: str) -> list[str]:
    """Split one whitespace-free chunk into DocRED tokens."""
    front: list[str] = []
    back: list[str] = []
    while len(word) > 1 and word[0] in _OPEN:
        # an apostrophe that starts a clitic ('s, 're) is not an opening quote
        if word[0] == "'" and _CLITIC.match("x" + word) and len(word) <= 3:
            break
        front.append(word[0])
        word = word[1:]
    while len(word) > 1 and word[-1] in _CLOSE:
        if word[-1] == "'" and not word[-2].isalpha():
            break
        back.append(word[-1])
        word = word[:-1]
    middle: list[str] = []
    currency = _CURRENCY.match(word)
    if currency:
        middle.append(currency.group(1))
        word = word[currency.end() :]
    tail: list[str] = []
    percent = _PERCENT.match(word)
    if percent:
        word, tail = percent.group(1), ["%"]
    clitic = _CLITIC.match(word)
    if clitic and (clitic.group(2).lower() != "n't" or len(clitic.group(1)) > 1):
        word, tail = clitic.group(1), [clitic.group(2), *tail]
    if word:
        middle.extend(part for part in _INFIX.split(word) if part)
    return front + middle + tail + back[::-1]


@lru_cache(maxsize=65536)
def _tokenize(name: str) -> tuple[str, ...]:
    out: list[str] = []
    for chunk in _SPACE.split(name.strip()):
        if chunk:
            out.extend(_split_word(chunk))
    return tuple(out)


def tokenize_name(name: str) -> list[str]:
    """The DocRED tokens of ``name`` (a new list; empty for an empty or blank name)."""
    return list(_tokenize(name))


def joined_name(name: str) -> str:
    """``name`` as its tokens joined by single spaces: the form a renamed mention's ``name`` takes."""
    return " ".join(_tokenize(name))


def name_key(name: str) -> str:
    """Comparison key for names (exclusion lists, collisions): tokenized, space-joined, case-folded."""
    return " ".join(_tokenize(name)).casefold()
