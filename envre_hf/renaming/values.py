"""Rule-based new values for NUM and TIME entities (step 4 without a knowledge base; docs/coherence.md).

The rules rewrite one *piece* (a digit group, a month, a number word) of the DocRED tokens at a time, so
tokenization never changes; pieces map injectively per entity, so ``2007`` and ``November 29, 2007`` of one
entity get the same new year and distinct names stay distinct.
"""

from __future__ import annotations

import random
import re
from calendar import isleap
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from .forms import NO_NOUN, counted_noun, is_count_of_one, is_one, pluralize, with_case

MONTHS = (
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
)  # fmt: skip
_MONTH_ABBR = {m[:3]: i for i, m in enumerate(MONTHS)} | {"Sept": 8}
_MONTH_FULL = {m: i for i, m in enumerate(MONTHS)}
_CARDINALS = (
    "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
    "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen",
)  # fmt: skip
_TENS = ("twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety")
_ORDINALS = (
    "first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth",
)  # fmt: skip
_HIGH_ORDINALS = (
    "eleventh", "twelfth", "thirteenth", "fourteenth", "fifteenth", "sixteenth", "seventeenth", "eighteenth",
    "nineteenth", "twentieth",
)  # fmt: skip
_WORD_GROUPS = {
    w: group for group in (_CARDINALS[:9], _CARDINALS[9:], _TENS, _ORDINALS, _HIGH_ORDINALS) for w in group
}

_PIECE = re.compile(
    r"(?P<clock>\b\d{1,2}:\d{2}\b)"
    r"|(?P<range>\b\d{4}[–-](?:\d{4}|\d{2})\b)"
    r"|(?P<decade>\d{2,4}(?=0?s\b)0?)(?=s\b)"
    r"|(?P<ordinal>\d+)(?P<suffix>st|nd|rd|th)\b"
    r"|(?P<number>\d+(?:[,.]\d+)*)"
    r"|(?P<word>[A-Za-z]+)"
)


_YEAR = re.compile(r"(?<!\d)(1\d{3}|20\d{2})(?!\d)")
_YEAR_RANGE = re.compile(r"(\d{4})[–-](\d{4}|\d{2})")


def has_year(tokens: Sequence[str]) -> bool:
    """Whether a TIME name has a four-digit year (1000-2099) in it."""
    return any(_YEAR.search(t) and not re.search(r"\d{5}|\d:\d", t) for t in tokens)


def years_in(tokens: Sequence[str]) -> list[int]:
    """The four-digit years (1000-2099) of a TIME name, range ends included."""
    out = []
    for t in tokens:
        if m := _YEAR_RANGE.fullmatch(t):
            start = int(m.group(1))
            end = m.group(2)
            out += [start, int(end) if len(end) == 4 else start - start % 100 + int(end)]
        elif len(t) == 4 and t.isdigit() and 1000 <= int(t) <= 2099:
            out.append(int(t))
    return out


def _feb29(tokens: Sequence[str]) -> bool:
    return any(
        t in ("February", "Feb", "Feb.") and {"29", "29th"} & set(tokens[max(0, i - 2) : i + 3])
        for i, t in enumerate(tokens)
    )


def document_year_shift(time_names: Sequence[Sequence[str]], rng: random.Random, max_shift: int = 30) -> int:
    """One non-zero year offset for all TIME names of a document, within ``max_shift``: no year moves past 2020
    (unless one already is) or below 1000, and with a 29 February leap years stay leap (every date stays valid)."""
    years = [y for tokens in time_names for y in years_in(tokens)]
    feb29 = [y for tokens in time_names if _feb29(tokens) for y in years_in(tokens)]
    top = max((y for y in years if y <= 2020), default=None)
    low = min(years, default=None)
    lo = -max_shift if low is None else max(-max_shift, 1000 - low)
    hi = max_shift if top is None else min(max_shift, 2020 - top)
    choices = [s for s in range(lo, hi + 1) if s and not any(isleap(y) and not isleap(y + s) for y in feb29)]
    return rng.choice(choices) if choices else rng.choice((-1, 1)) * rng.randint(1, max_shift)


def _ordinal_suffix(n: int) -> str:
    if 10 <= n % 100 <= 20:
        return "th"
    return {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")


def _new_digits(digits: str, rng: random.Random) -> str:
    """Same length, same number of trailing zeros, leading digit non-zero unless the original's was zero."""
    n = len(digits)
    zeros = n - len(digits.rstrip("0"))
    if zeros == n:  # "0", "00"
        return digits
    free = n - zeros
    lows = [1 if (i == 0 and digits[0] != "0") or i == free - 1 else 0 for i in range(free)]
    return "".join(str(rng.randint(lo, 9)) for lo in lows) + "0" * zeros


def _with_layout(template: str, digits: str) -> str:
    """Put ``digits`` into the comma/decimal layout of ``template``."""
    it = iter(digits)
    return "".join(next(it) if ch.isdigit() else ch for ch in template)


def _new_number(text: str, digits: str, rng: random.Random, percent: bool) -> str:
    """New digits in ``text``'s layout; never ``1`` unless the original was (grammatical number), <= 100 for
    percentages (a value that cannot comply comes back unchanged, which the caller refuses)."""
    for _ in range(20):
        new = _with_layout(text, _new_digits(digits, rng))
        if new == "1" and text != "1":
            continue
        if percent and float(new.replace(",", "")) > 100:
            continue
        return new
    return text


def _new_year(year: int, rng: random.Random) -> int:
    top = 2020 if year <= 2020 else year + 30
    choices = [y for y in range(max(1000, year - 30), min(top, year + 30) + 1) if y != year]
    return rng.choice(choices)


@dataclass(frozen=True)
class ValueRename:
    """New tokens for each distinct original name of one NUM/TIME entity, and the value format."""

    tokens: dict[str, list[str]]
    fine_type: str


@dataclass
class _PieceMap:
    """Per-entity injective map of pieces (``(kind, text)`` -> new text); ``year_shift`` moves every year by it
    and decades by it rounded to ten, instead of random draws."""

    rng: random.Random
    time: bool
    year_shift: int | None = None
    percent: bool = False
    keep_month_day: bool = False
    map: dict[tuple[str, str], str] = field(default_factory=dict)
    used: dict[str, set[str]] = field(default_factory=dict)

    def year(self, text: str) -> str | None:
        if self.year_shift is None:
            return self.get("year", text, lambda: str(_new_year(int(text), self.rng)))
        return self.get("year", text, lambda: str(int(text) + self.year_shift))

    def get(self, kind: str, text: str, make: Callable[[], str]) -> str | None:
        key = (kind, text)
        if key in self.map:
            return self.map[key]
        used = self.used.setdefault(kind, set())
        for _ in range(50):
            new = make()
            if new != text and new not in used:
                used.add(new)
                self.map[key] = new
                return new
        return None


def _is_month(token: str) -> int | None:
    return _MONTH_FULL.get(token, _MONTH_ABBR.get(token.rstrip(".")))


def _near_month(tokens: Sequence[str], i: int) -> bool:
    """A month name within two tokens of token ``i`` (a number there is a day)."""
    return any(_is_month(tokens[j]) is not None for j in (i - 1, i + 1, i - 2, i + 2) if 0 <= j < len(tokens))


def _rewrite_token(tokens: Sequence[str], i: int, pieces: _PieceMap, kinds: list[str]) -> str | None:
    """Token ``i`` with every piece replaced; ``None`` when a piece has no new value."""
    token = tokens[i]
    month = _is_month(token) if pieces.time else None
    if month is not None and (token in _MONTH_FULL or len(tokens) > 1):
        return _month_token(token, month, pieces, kinds)
    out: list[str] = []
    pos = 0
    for m in _PIECE.finditer(token):
        out.append(token[pos : m.start()])
        pos = m.end()
        new = _new_piece(m, tokens, i, pieces, kinds)
        if new is None:
            return None
        out.append(new)
    out.append(token[pos:])
    return "".join(out)


def _new_piece(m: re.Match[str], tokens: Sequence[str], i: int, pieces: _PieceMap, kinds: list[str]) -> str | None:
    """The new text of one ``_PIECE`` match in token ``i`` (a piece no rule changes comes back as it is), its
    kind appended to ``kinds``; ``None`` when it has no new value."""
    text = m.group(0)
    if m.group("clock"):
        return _clock_piece(text, pieces, kinds)
    if m.group("range"):
        return _range_piece(text, pieces, kinds)
    if m.group("decade"):
        return _decade_piece(m.group("decade"), pieces, kinds)
    if m.group("ordinal"):
        return _ordinal_piece(text, int(m.group("ordinal")), tokens, i, pieces, kinds)
    if m.group("number"):
        return _number_piece(text, tokens, i, pieces, kinds)
    return _word_piece(text, pieces, kinds)


def _month_token(token: str, month: int, pieces: _PieceMap, kinds: list[str]) -> str | None:
    """A month name (full or abbreviated, as written) replaced by another, or kept under ``keep_month_day``."""
    kinds.append("month")
    if pieces.keep_month_day:
        return token
    new_month = pieces.get("month", MONTHS[month], lambda: pieces.rng.choice(MONTHS))
    if new_month is None:
        return None
    if token in _MONTH_FULL:
        return new_month
    return new_month if new_month == "May" else new_month[:3] + ("." if token.endswith(".") else "")


def _clock_piece(text: str, pieces: _PieceMap, kinds: list[str]) -> str | None:
    """A clock time ("9:30"): a new one in the same half of the day, hours as wide as before."""
    kinds.append("clock")
    rng = pieces.rng
    hour = int(text.split(":")[0])
    return pieces.get(
        "clock",
        text,
        lambda: f"{rng.randint(13, 23) if hour > 12 else rng.randint(1, 12):0{len(text.split(':')[0])}d}"
        f":{rng.randint(0, 59):02d}",
    )


def _range_piece(text: str, pieces: _PieceMap, kinds: list[str]) -> str | None:
    """A year range ("1990-95", "1990–1995"): the start year renamed, the span kept."""
    kinds.append("year")
    start, sep, end = text[:4], text[4], text[5:]
    new_start = pieces.year(start)
    if new_start is None:
        return None
    span = int(end) - int(start[-len(end) :]) if len(end) == 2 else int(end) - int(start)
    end_value = int(new_start) + span
    return new_start + sep + (f"{end_value % 100:02d}" if len(end) == 2 else str(end_value))


def _decade_piece(digits: str, pieces: _PieceMap, kinds: list[str]) -> str | None:
    """The digits of a decade ("1990" of "1990s", "90" of "90s"): moved by the year offset rounded to ten, else
    a random step (four-digit decades up to 2010 stay there or below)."""
    kinds.append("decade")
    rng = pieces.rng
    width = len(digits)

    def make_decade() -> str:
        base = int(digits)
        if pieces.year_shift is not None:
            step = 10 * round(pieces.year_shift / 10) or (10 if pieces.year_shift > 0 else -10)
            return f"{(base + step) % (10 ** width):0{width}d}"
        step = rng.choice((-50, -40, -30, -20, -10, 10, 20, 30)) if width == 4 else rng.choice((-30, -20, -10, 10, 20))
        value = base + step
        if width == 4 and base <= 2010:
            value = min(value, 2010)
        return f"{value % (10 ** width):0{width}d}"

    return pieces.get("decade", digits, make_decade)


def _ordinal_piece(
    text: str, value: int, tokens: Sequence[str], i: int, pieces: _PieceMap, kinds: list[str]
) -> str | None:
    """An ordinal in digits ("19th"): a century, a day (next to a month) or a plain ordinal, with its suffix."""
    rng = pieces.rng
    nxt = tokens[i + 1].lower() if i + 1 < len(tokens) else ""
    century = pieces.time and (nxt.startswith("centur") or nxt == "-" and i + 2 < len(tokens))
    day = pieces.time and value <= 31 and _near_month(tokens, i)
    kinds.append("century" if century else "day" if day else "ordinal")
    hi = 21 if century else 28 if day else max(9, value * 2)
    lo = 12 if century and value >= 12 else 1
    kind = "day" if day else "ordinal"
    if day and pieces.keep_month_day:
        return text  # a day ordinal is its whole token ("31st")
    new_value = pieces.get(kind, str(value), lambda: str(rng.randint(lo, max(hi, lo + 1))))
    return None if new_value is None else new_value + _ordinal_suffix(int(new_value))


def _number_piece(text: str, tokens: Sequence[str], i: int, pieces: _PieceMap, kinds: list[str]) -> str | None:
    """A digit group: a year (TIME, 1000-2099), a day (TIME, next to a month) or a number in the same layout."""
    rng = pieces.rng
    digits = re.sub(r"\D", "", text)
    is_year = pieces.time and len(text) == 4 and text.isdigit() and 1000 <= int(text) <= 2099
    is_day = pieces.time and text.isdigit() and len(text) <= 2 and 1 <= int(text) <= 31 and _near_month(tokens, i)
    if is_year:
        kinds.append("year")
        return pieces.year(text)
    if is_day:
        kinds.append("day")
        if pieces.keep_month_day:
            return text
        width = len(text) if text.startswith("0") else 1
        return pieces.get("day", text, lambda: f"{rng.randint(1, 28):0{width}d}")
    kinds.append("number")
    return pieces.get("number", text, lambda: _new_number(text, digits, rng, pieces.percent))


def _word_piece(text: str, pieces: _PieceMap, kinds: list[str]) -> str | None:
    """A number word ("three", "twentieth") replaced by another of its group, never "one"; other words kept."""
    lower = text.lower()
    group = _WORD_GROUPS.get(lower)
    if group is None:
        return text
    kinds.append("words")
    # "one" -> never "one", nothing -> "one": the noun after a count keeps its number
    choices = [w for w in group if w != "one"]
    new_word = pieces.get("word", lower, lambda: pieces.rng.choice(choices))
    return None if new_word is None else with_case(text, new_word)


#: TIME formats by the kinds of pieces a name has, the first that fits wins.
_TIME_FORMATS = (
    ({"month", "day", "year"}, "date"), ({"month", "year"}, "month-year"), ({"month", "day"}, "day-month"),
    ({"month"}, "month"), ({"century"}, "century"), ({"decade"}, "decade"), ({"year"}, "year"),
    ({"clock"}, "clock"), ({"words"}, "words"),
)  # fmt: skip


def _fine_type(coarse: str, kinds: list[str], tokens: Sequence[str]) -> str:
    k = set(kinds)
    if coarse == "TIME":
        fmt = next((fmt for need, fmt in _TIME_FORMATS if need <= k), "number")
    elif "%" in tokens:
        fmt = "percent"
    elif any(re.search(r"[$€£¥₹]", t) for t in tokens):
        fmt = "currency"
    elif "words" in k and "number" not in k:
        fmt = "words"
    else:
        fmt = "ordinal" if "ordinal" in k else "number"
    return f"{coarse}:{fmt}"


def rename_values(
    coarse: str,
    names: Sequence[tuple[str, Sequence[str]]],
    rng: random.Random,
    accept: Callable[[str], bool] | None = None,
    attempts: int = 10,
    year_shift: int | None = None,
    percent: bool = False,
) -> ValueRename | None:
    """New tokens for each ``(original name, original tokens)`` of one entity, most frequent first, or ``None``
    when some name has no rule, its counted noun cannot be told, or no acceptable value was found.

    ``accept(new_joined_name)`` may veto a value (exclusions, collisions): the entity is redrawn up to
    ``attempts`` times. ``year_shift`` (TIME) moves every year by one offset and keeps month and day of names
    with a year; ``percent`` (NUM) keeps values within 0-100; a count of one that changes pluralises its noun.
    """
    if year_shift is not None and not year_shift:
        raise ValueError("year_shift must be non-zero (a zero shift changes no year)")
    originals = {" ".join(tokens).casefold() for _, tokens in names} | {name.casefold() for name, _ in names}
    for _ in range(attempts):
        pieces = _PieceMap(rng, time=coarse == "TIME", year_shift=year_shift, percent=percent)
        result: dict[str, list[str]] = {}
        seen: set[str] = set()
        kinds_first: list[str] = []
        for n, (name, tokens) in enumerate(names):
            kinds: list[str] = []
            new_tokens = []
            pieces.keep_month_day = year_shift is not None and coarse == "TIME" and has_year(tokens)
            for i in range(len(tokens)):
                new = _rewrite_token(tokens, i, pieces, kinds)
                if new is None:
                    return None
                new_tokens.append(new)
            if not kinds:
                return None  # nothing to change in this name: no rule applies
            for i in range(len(tokens) - 1):
                if not is_count_of_one(tokens, i) or is_one(new_tokens[i]):
                    continue
                noun = counted_noun(tokens[i + 1 :])
                if noun is None:
                    return None  # the counted noun cannot be told: the count stays one
                j = i + 1 + noun
                if noun != NO_NOUN and new_tokens[j] == tokens[j]:
                    new_tokens[j] = pluralize(tokens[j])
            joined = " ".join(new_tokens)
            key = joined.casefold()
            if key in originals or key in seen or (accept is not None and not accept(joined)):
                break  # redraw the whole entity
            seen.add(key)
            result[name] = new_tokens
            if n == 0:
                kinds_first = kinds
        else:
            return ValueRename(result, _fine_type(coarse, kinds_first, names[0][1]))
    return None
