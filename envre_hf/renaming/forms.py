"""Surface-form classes of names (demonym, acronym, plain; article, plural, possessive), the indefinite article a
name takes, and grammatical number after a count (rules ``forms-1``, ``articles-1``, ``num-3`` of docs/coherence.md).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from ..kb.demonyms import is_demonym
from ..documents.tokenize import tokenize_name

DEMONYM, ACRONYM, PLAIN = "demonym", "acronym", "plain"
_ACRONYM = re.compile(r"^(?=(?:[^A-Z]*[A-Z]){2})[A-Z0-9.&]+$")
_POSSESSIVE = ("'s", "'", "’s", "’")
_ARTICLES = frozenset({"the", "The", "THE"})
_NOT_PLURAL = ("ss", "us", "is", "ys", "os", "as", "'s")


# --------------------------------------------------------------------------- a / an

_AN_LETTERS = frozenset("AEFHILMNORSX")  # letters whose name starts with a vowel sound: "an FBI", "an MS"
_YOU_PREFIXES = (
    "eu", "ue", "uga", "uni", "use", "usu", "uti", "ura", "ure", "uro", "uto", "uku", "ukr", "ubi", "ufo", "ute",
)  # fmt: skip
_SILENT_H = ("hour", "honest", "honor", "honour", "heir")
_ONE = ("one", "once")
INDEFINITE = frozenset({"a", "an", "A", "An", "AN"})


def _number_article(word: str) -> str:
    digits = re.match(r"\d[\d,]*", word)
    assert digits is not None
    value = digits.group(0).replace(",", "")
    # read aloud: 8, 11, 18, 80-89, 800..., 8000..., 11000, 18000 start with a vowel sound
    eleven = value[:2] in ("11", "18") and len(value) in (2, 5, 8)
    return "an" if value.startswith("8") or eleven else "a"


def indefinite_article(tokens: Sequence[str]) -> str:
    """``"a"`` or ``"an"`` for a name starting with ``tokens[0]`` (letters, with the usual exceptions)."""
    word = next((t for t in tokens if t not in ('"', "'", "(", "`", "``")), "")
    if not word:
        return "a"
    if word[0].isdigit():
        return _number_article(word)
    letters = word.replace(".", "")
    spelled = len(letters) > 1 and letters.isupper() and letters.isalpha() and len(letters) <= 5
    if spelled and not _pronounceable(letters):
        return "an" if letters[0] in _AN_LETTERS else "a"
    if len(word) == 1 and word.isalpha():  # "an X", "a B"
        return "an" if word.upper() in _AN_LETTERS else "a"
    lower = word.lower()
    if lower.startswith(_SILENT_H):
        return "an"
    if lower.startswith(_YOU_PREFIXES) or lower.startswith(_ONE):
        return "a"
    return "an" if lower[0] in "aeiou" else "a"


def _pronounceable(letters: str) -> bool:
    """Acronyms read as words (``NASA``, ``UNESCO``, ``NATO``): a vowel in second or third place, 4+ letters."""
    vowels = set("AEIOU")
    return len(letters) >= 4 and any(ch in vowels for ch in letters[1:3]) and letters[0] not in "X"


def with_case(template: str, word: str) -> str:
    """``word`` in the capitalisation of ``template`` (``An`` -> ``A``, ``AN`` -> ``A``)."""
    if template.isupper() and len(template) > 1:
        return word.upper()
    if template[:1].isupper():
        return word[:1].upper() + word[1:]
    return word


# --------------------------------------------------------------------------- grammatical number

_IRREGULAR = {
    "man": "men", "woman": "women", "child": "children", "person": "people", "foot": "feet", "tooth": "teeth",
    "mouse": "mice", "goose": "geese", "life": "lives", "wife": "wives", "knife": "knives", "half": "halves",
    "leaf": "leaves", "wolf": "wolves", "calf": "calves", "shelf": "shelves", "thief": "thieves",
    "series": "series", "species": "species", "sheep": "sheep", "deer": "deer", "fish": "fish",
    "aircraft": "aircraft", "crisis": "crises", "thesis": "theses", "analysis": "analyses",
}  # fmt: skip
#: Words that end the noun phrase after a count ("one of", "one year later", "one million").
_PHRASE_END = frozenset(
    """
    of and or but nor to in on at by for with from as into than that which who whom whose is was are were be been
    has had have will would can could may might must shall should do did does not no yes the a an this those these
    his her its their our my your one two hundred thousand million billion trillion dozen score most less
    another each every so too also just even half quarter third
    about above across after against ago along among apart apiece around away back before behind below beneath
    beside besides between beyond despite down during except inside like near off onto out outside over past
    per since through throughout till toward towards under until up upon via within without when where while
    whereas whether if because although though unless then there here now later earlier again alone together
    ever never always already still yet either neither both all any some many much few several
    i me he him she it we us they them you what
    """.split()
)
#: Modifiers that never are the counted noun but do not end its phrase ("one more song", "one single").
_MODIFIERS = frozenset("more other only own very such same single sole extra further additional".split())


def is_one(token: str) -> bool:
    """A count of one written as a word or a digit."""
    return token.lower() in ("one", "1")


def is_count_of_one(tokens: Sequence[str], i: int) -> bool:
    """``tokens[i]`` counts one thing: "one", "1", not the end of "seventy - one" or "twenty one"."""
    if not is_one(tokens[i]):
        return False
    before = tokens[i - 1].lower() if i > 0 else ""
    return before not in ("-", "–") and not before.endswith("ty")


#: Common irregular past tenses: a word after the noun that is a verb, not the noun ("one song became").
_IRREGULAR_PAST = frozenset(
    """
    became began bore broke brought built bought came caught chose drew drove ate fell felt fought found flew
    forgot froze gave got grew hung held hid hit hurt kept knew laid led left lent let lay lost made meant met
    paid put quit ran rang rose said saw sought sold sent set shook shot shut sang sank sat slept spoke spent
    spun split spread stood stole stuck struck swore swept swam took taught tore told thought threw understood
    woke wore won wrote
    """.split()
)
#: Common adjectives without an adjective ending: a modifier, never the counted noun ("one large island").
_ADJECTIVES = frozenset(
    """
    large small big little main major minor new old young long short high low great good bad early late full
    whole double top first last next previous final local national international public private former current
    different certain general special common real true free open close wide deep broad great grand huge tiny
    key prime chief senior junior total entire complete strong weak hard soft hot cold dark light black white
    red green blue brown grey gray
    """.split()
)
#: Endings of words that are rarely a counted noun: adverbs, superlatives, participles, adjectives.
_NOT_NOUN_ENDINGS = ("ly", "est", "ed", "ing", "ous", "ful", "ive", "less", "able", "ible", "ish", "ical")
#: What :func:`counted_noun` returns when no noun follows the count ("one of the first", "one .").
NO_NOUN = -1
_MAX_PHRASE = 4  # words of a noun phrase after a count ("one large main island"): more cannot be told


_UNITS = frozenset("m g l v w ha hp kb mb gb ml mi oz kph rpm sq yd".split())


def _is_unit(token: str) -> bool:
    """A unit abbreviation (``mm``, ``km``, ``kg``, ``ft``, ``oz``): lowercase, no vowel or a known one."""
    return token.islower() and len(token) <= 3 and (token in _UNITS or not any(c in "aeiouy" for c in token))


def is_count_noun(token: str) -> bool:
    """A lowercase singular word that may be the noun a count of one agrees with (``year``, not ``of``/``large``)."""
    return (
        len(token) >= 2
        and token.isalpha()
        and token.islower()
        and token not in _PHRASE_END
        and token not in _MODIFIERS
        and token not in _ADJECTIVES
        and token not in _IRREGULAR_PAST
        and not token.endswith(_NOT_NOUN_ENDINGS)
        and not (token.endswith("s") and not token.endswith("ss") and token not in _IRREGULAR)
    )


def counted_noun(following: Sequence[str]) -> int | None:
    """Index, among the tokens after a count of one, of the noun it counts: the last word of the phrase up to
    a function word or punctuation ("one large main island in" -> ``island``).

    :data:`NO_NOUN` when no noun phrase, a unit ("1 mm") or a name ("one Oscar") follows; ``None`` when the
    noun cannot be told (a verb, an adjective, a plural, a long phrase): the count then stays one, not a guess.
    """
    n = 0
    while n < len(following) and following[n].isalpha() and following[n].lower() not in _PHRASE_END:
        n += 1
    if n == 0 or _is_unit(following[0]) or not following[n - 1].islower():
        return NO_NOUN  # "1 mm": a unit does not inflect; "1 May", "one Oscar": a name is not a counted noun
    if n > _MAX_PHRASE or not is_count_noun(following[n - 1]):
        return None
    return n - 1


def pluralize(word: str) -> str:
    """The plural of an English count noun (regular rules and the common irregular nouns)."""
    lower = word.lower()
    if lower in _IRREGULAR:
        plural = _IRREGULAR[lower]
    elif lower.endswith(("s", "x", "z", "ch", "sh")):
        plural = lower + "es"
    elif lower.endswith("y") and lower[-2:-1] not in tuple("aeiou"):
        plural = lower[:-1] + "ies"
    else:
        plural = lower + "s"
    return with_case(word, plural)


@dataclass(frozen=True)
class NameForm:

    hard: str
    article: bool
    plural: bool
    possessive: tuple[str, ...]  # the ending tokens ("'s",) or ()


@lru_cache(maxsize=65536)
def form_of_tokens(tokens: tuple[str, ...]) -> NameForm:
    """:class:`NameForm` of a name's DocRED tokens (a tuple, cached), read without its possessive ending."""
    ending = tokens[-1:] if len(tokens) > 1 and tokens[-1] in _POSSESSIVE else ()
    stem = tokens[: len(tokens) - len(ending)]
    if is_demonym(stem):
        hard = DEMONYM
    elif len(stem) == 1 and _ACRONYM.match(stem[0]):  # capitals (dots, & and digits allowed), 2+ letters
        hard = ACRONYM
    else:
        hard = PLAIN
    article = len(stem) > 1 and stem[0] in _ARTICLES
    last = stem[-1] if stem else ""
    plural = (  # only with an article: "The Beatles", "the United States" (not "Jones", "Athens")
        article
        and len(last) > 3
        and last[:1].isupper()
        and last.endswith("s")
        and not last.endswith(_NOT_PLURAL)
        and not last.isupper()
    )
    return NameForm(hard, article, plural, ending)


@lru_cache(maxsize=65536)
def form_of(name: str) -> NameForm:
    """:class:`NameForm` of a name string (tokenized as DocRED does)."""
    return form_of_tokens(tuple(tokenize_name(name)))
