"""Surface-form classes of names, and the indefinite article a name takes.

A mention's *form* says how the name sits in its sentence. "an American politician" needs a
demonym in that slot, "the U.S. Army" an acronym; putting "Kazakhstan" into the first reads as
broken text rather than as a new name. The pipeline therefore gives each original name a new
name of the same *hard* form (:func:`hard_form`):

* ``demonym``: a demonym or adjective of a place, people or religion (``American``, ``South
  Korean``, ``Shanghainese``, ``Catholic``), from :data:`DEMONYMS` (a name counts when its last
  token is one, optionally after a direction/era word such as ``South``/``Ancient``, or when
  hyphen-joined parts all are);
* ``acronym``: one token of capitals (dots, ``&`` and digits allowed), ``NASA``, ``U.S.``;
* ``plain``: anything else.

*Soft* forms are preferred when the candidate has a name of that form, never required: a
leading article (``The Beatles``) and, after one, a plural last word (``The Lakers``). A *possessive* name
(last token ``'s``/``'``) keeps its ending: its stem is matched and the ending put back.

:func:`indefinite_article` spells "a" or "an" for the first word of a name by letters, with the
usual exceptions: letter-by-letter acronyms (``an MS``, ``a UN``), ``eu``/``uni``/``one`` words
(``a European``, ``a University``, ``a one``), silent ``h`` (``an hour``) and numbers read aloud
(``an 8``, ``an 11``, ``an 18``, ``an 80``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from .tokenize import tokenize_name

#: Demonyms and adjectives of countries, regions, cities, peoples and religions (capitalised words).
DEMONYMS: frozenset[str] = frozenset(
    """
    Afghan Albanian Algerian American Andorran Angolan Antiguan Argentine Argentinian Armenian Australian
    Austrian Azerbaijani Azeri Bahamian Bahraini Bangladeshi Barbadian Belarusian Belgian Belizean Beninese
    Bhutanese Bolivian Bosnian Botswanan Brazilian British Bruneian Bulgarian Burkinabe Burmese Burundian
    Cambodian Cameroonian Canadian Chadian Chilean Chinese Colombian Comorian Congolese Croatian Cuban
    Cypriot Czech Danish Djiboutian Dominican Dutch Ecuadorian Egyptian Emirati English Equatoguinean
    Eritrean Estonian Ethiopian Fijian Filipino Finnish French Gabonese Gambian Georgian German Ghanaian
    Greek Grenadian Guatemalan Guinean Guyanese Haitian Honduran Hungarian Icelandic Indian Indonesian
    Iranian Iraqi Irish Israeli Italian Ivorian Jamaican Japanese Jordanian Kazakh Kazakhstani Kenyan
    Kiribati Korean Kosovar Kuwaiti Kyrgyz Laotian Latvian Lebanese Liberian Libyan Liechtensteiner
    Lithuanian Luxembourgish Macedonian Malagasy Malawian Malaysian Maldivian Malian Maltese Mauritanian
    Mauritian Mexican Micronesian Moldovan Moldavian Monegasque Mongolian Montenegrin Moroccan Mozambican
    Namibian Nauruan Nepalese Nepali Nicaraguan Nigerian Nigerien Norwegian Omani Pakistani Palauan
    Palestinian Panamanian Paraguayan Peruvian Polish Portuguese Qatari Romanian Russian Rwandan Salvadoran
    Samoan Saudi Scottish Senegalese Serbian Seychellois Singaporean Slovak Slovakian Slovene Slovenian
    Somali Spanish Sudanese Surinamese Swazi Swedish Swiss Syrian Taiwanese Tajik Tanzanian Thai Togolese
    Tongan Trinidadian Tunisian Turkish Turkmen Tuvaluan Ugandan Ukrainian Uruguayan Uzbek Venezuelan
    Vietnamese Welsh Yemeni Zambian Zimbabwean
    African Asian European Oceanian Antarctic Arctic Arab Arabian Caribbean Mediterranean Scandinavian
    Nordic Baltic Balkan Slavic Latin Hispanic Iberian Anglo Celtic Gaelic Germanic Persian Roman Greek
    Byzantine Ottoman Soviet Yugoslav Prussian Bavarian Saxon Frankish Norman Viking Aztec Mayan Inca
    Mongol Tatar Kurdish Basque Catalan Galician Flemish Walloon Corsican Sicilian Sardinian Venetian
    Tuscan Neapolitan Castilian Andalusian Breton Cornish Manx Scots Ulster Hawaiian Alaskan Texan
    Californian Floridian Quebecois Quebecer Tibetan Uyghur Cantonese Shanghainese Hokkien Hakka Manchu
    Punjabi Bengali Tamil Telugu Gujarati Marathi Kashmiri Sindhi Pashtun Baloch Parthian Sasanian
    Assyrian Babylonian Phoenician Hebrew Hellenic Helvetic Etruscan Papuan Maori Aboriginal Polynesian
    Melanesian Malay Malayan Javanese Balinese Sumatran Bornean Okinawan Siberian Patagonian Andean
    Amazonian Appalachian Rhodesian Parisian Londoner Berliner Viennese Roman Milanese Florentine
    Mancunian Liverpudlian Glaswegian Bostonian Chicagoan Madrilenian Muscovite Victorian Edwardian
    Georgian Elizabethan Jacobean Napoleonic Carolingian Merovingian Habsburg Tudor Augustan
    Catholic Christian Jewish Muslim Islamic Buddhist Hindu Sikh Jain Protestant Anglican Orthodox
    Lutheran Methodist Baptist Presbyterian Calvinist Evangelical Mormon Quaker Sunni Shia Shiite
    Zoroastrian Taoist Confucian Shinto
    Yiddish Swahili Arabic Sanskrit Bhojpuri Urdu Hindi Farsi Esperanto
    """.split()
)
#: Words that may stand before a demonym in a demonym name (``South Korean``, ``Ancient Egyptian``).
DEMONYM_PREFIXES: frozenset[str] = frozenset(
    "North South East West Central Northern Southern Eastern Western Northeastern Northwestern Southeastern "
    "Southwestern Ancient Native Latin Low High Upper Lower Classical Old Middle Modern New Early Late Sub-Saharan "
    "Equatorial Roman Greek Pre-Columbian".split()
)

DEMONYM, ACRONYM, PLAIN = "demonym", "acronym", "plain"
_ACRONYM = re.compile(r"^(?=(?:[^A-Z]*[A-Z]){2})[A-Z0-9.&]+$")
_POSSESSIVE = ("'s", "'", "’s", "’")
_ARTICLES = frozenset({"the", "The", "THE"})
_NOT_PLURAL = ("ss", "us", "is", "ys", "os", "as", "'s")


def _is_demonym_word(token: str) -> bool:
    parts = [p for p in token.split("-") if p]
    return bool(parts) and all(p in DEMONYMS for p in parts)


def is_demonym(tokens: Sequence[str]) -> bool:
    """Whether a name (DocRED tokens) is a demonym/adjective form (see the module docstring)."""
    if not tokens:
        return False
    words = [t for t in tokens if t != "-"]
    if not words or not _is_demonym_word(words[-1]):
        return False
    if any("-" in t for t in tokens) or "-" in tokens:  # "African - American", "German-American"
        return all(_is_demonym_word(w) for w in words)
    return all(w in DEMONYM_PREFIXES or w in DEMONYMS for w in words[:-1])


def is_acronym(tokens: Sequence[str]) -> bool:
    """One token of capitals (dots, ``&`` and digits allowed) with at least two capital letters."""
    return len(tokens) == 1 and bool(_ACRONYM.match(tokens[0]))


def possessive_split(tokens: Sequence[str]) -> tuple[list[str], list[str]]:
    """``(stem, ending)``: ``(["Smith"], ["'s"])`` for ``Smith 's``; ending ``[]`` otherwise."""
    if len(tokens) > 1 and tokens[-1] in _POSSESSIVE:
        return list(tokens[:-1]), [tokens[-1]]
    return list(tokens), []


def hard_form(tokens: Sequence[str]) -> str:
    """``demonym``, ``acronym`` or ``plain`` of a name's tokens (a possessive ending ignored)."""
    stem, _ = possessive_split(tokens)
    if is_demonym(stem):
        return DEMONYM
    if is_acronym(stem):
        return ACRONYM
    return PLAIN


def soft_forms(tokens: Sequence[str]) -> tuple[bool, bool]:
    """``(leading article, plural last word)`` of a name (possessive ending ignored)."""
    stem, _ = possessive_split(tokens)
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
    return article, plural


# --------------------------------------------------------------------------- a / an

_AN_LETTERS = frozenset("AEFHILMNORSX")  # letters whose name starts with a vowel sound: "an FBI", "an MS"
_YOU_PREFIXES = ("eu", "ue", "uga", "uni", "use", "usu", "uti", "ura", "ure", "uro", "uto", "uku", "ukr", "ubi", "ufo", "ute")
_SILENT_H = ("hour", "honest", "honor", "honour", "heir")
_ONE = ("one", "once")


def _number_article(word: str) -> str:
    digits = re.match(r"\d[\d,]*", word)
    assert digits is not None
    value = digits.group(0).replace(",", "")
    # read aloud: 8, 11, 18, 80-89, 800..., 8000..., 11000, 18000 start with a vowel sound
    if value.startswith("8"):
        return "an"
    if value[:2] in ("11", "18") and len(value) in (2, 5, 8):
        return "an"
    return "a"


def indefinite_article(tokens: Sequence[str]) -> str:
    """``"a"`` or ``"an"`` for a name starting with ``tokens[0]`` (letters, with the usual exceptions)."""
    word = next((t for t in tokens if t not in ('"', "'", "(", "`", "``")), "")
    if not word:
        return "a"
    if word[0].isdigit():
        return _number_article(word)
    letters = word.replace(".", "")
    if len(letters) > 1 and letters.isupper() and letters.isalpha() and len(letters) <= 5 and not _pronounceable(letters):
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


def article_agrees(article: str, tokens: Sequence[str]) -> bool:
    """Whether ``a``/``an`` (any case) fits the name ``tokens``."""
    return article.lower() == indefinite_article(tokens)


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
#: Words after "one" that are not the counted noun ("one of", "one hundred", "one more").
_NOT_NOUN = frozenset(
    """
    of and or but nor to in on at by for with from as into than that which who whom whose is was are were be been
    has had have will would can could may might must shall should do did does not no yes the a an this those these
    his her its their our my your one two hundred thousand million billion trillion dozen score more most less
    other another each every such same only own very so too also just even half quarter third
    """.split()
)


def is_one(token: str) -> bool:
    """A count of one written as a word or a digit."""
    return token.lower() in ("one", "1")


def is_count_noun(token: str) -> bool:
    """A lowercase word that may be the noun a count of one agrees with (``year``, not ``of``/``hundred``)."""
    return (
        len(token) >= 2
        and token.isalpha()
        and token.islower()
        and token not in _NOT_NOUN
        and not token.endswith(("ly", "est"))
        and not (token.endswith("s") and not token.endswith("ss") and token not in _IRREGULAR)
    )


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
    """The form classes of one name (see the module docstring)."""

    hard: str
    article: bool
    plural: bool
    possessive: tuple[str, ...]  # the ending tokens ("'s",) or ()


def form_of_tokens(tokens: Sequence[str]) -> NameForm:
    stem, ending = possessive_split(tokens)
    article, plural = soft_forms(stem)
    return NameForm(hard_form(stem), article, plural, tuple(ending))


@lru_cache(maxsize=65536)
def form_of(name: str) -> NameForm:
    """:class:`NameForm` of a name string (tokenized as DocRED does)."""
    return form_of_tokens(tokenize_name(name))
