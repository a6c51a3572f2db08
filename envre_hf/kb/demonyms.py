"""Demonyms: the lexicon that tells a demonym/adjective name ("American", "South Korean") from a plain one,
shared by the corpus KB and the renaming pipeline's form classes. A name is a demonym when its last word is in
:data:`DEMONYMS` (after optional :data:`DEMONYM_PREFIXES`), or when it joins demonyms by hyphens.
"""

from __future__ import annotations

from collections.abc import Sequence

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
    African Asian European Oceanian Antarctic Arab Arabian Scandinavian
    Nordic Baltic Balkan Slavic Latin Hispanic Iberian Anglo Gaelic Germanic Persian Roman Greek
    Byzantine Ottoman Soviet Yugoslav Prussian Bavarian Saxon Frankish Aztec Mayan Inca
    Mongol Tatar Kurdish Basque Catalan Galician Flemish Walloon Corsican Sicilian Sardinian Venetian
    Tuscan Neapolitan Castilian Andalusian Breton Cornish Manx Scots Hawaiian Alaskan Texan
    Californian Floridian Quebecois Quebecer Tibetan Uyghur Cantonese Shanghainese Hokkien Hakka Manchu
    Punjabi Bengali Tamil Telugu Gujarati Marathi Kashmiri Sindhi Pashtun Baloch Parthian Sasanian
    Assyrian Babylonian Phoenician Hebrew Hellenic Helvetic Etruscan Papuan Maori Aboriginal Polynesian
    Melanesian Malay Malayan Javanese Balinese Sumatran Bornean Okinawan Siberian Patagonian Andean
    Amazonian Appalachian Rhodesian Parisian Londoner Berliner Viennese Roman Milanese Florentine
    Mancunian Liverpudlian Glaswegian Bostonian Chicagoan Madrilenian Muscovite Victorian Edwardian
    Georgian Elizabethan Jacobean Napoleonic Carolingian Merovingian  Augustan
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


def _is_demonym_word(token: str) -> bool:
    parts = [p for p in token.split("-") if p]
    return bool(parts) and all(p in DEMONYMS for p in parts)


def is_demonym(tokens: Sequence[str]) -> bool:
    """Whether a name (DocRED tokens) is a demonym/adjective form (see the module docstring)."""
    if not tokens or (tokens[-1] not in DEMONYMS and "-" not in tokens[-1]):
        return False  # the common case, decided without building anything
    words = [t for t in tokens if t != "-"]
    if not words or not _is_demonym_word(words[-1]):
        return False
    if any("-" in t for t in tokens) or "-" in tokens:  # "African - American", "German-American"
        return all(_is_demonym_word(w) for w in words)
    return all(w in DEMONYM_PREFIXES or w in DEMONYMS for w in words[:-1])


__all__ = ["DEMONYMS", "DEMONYM_PREFIXES", "is_demonym"]
