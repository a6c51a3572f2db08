"""NUM/TIME value rules: format kept, value changed, deterministic per seed."""

from __future__ import annotations

import random
import re

import pytest

from envre_hf.documents.tokenize import tokenize_name
from envre_hf.renaming import rename_values
from envre_hf.renaming.values import MONTHS

MONTH = "(?:" + "|".join(MONTHS) + ")"


def _one(coarse: str, name: str, seed: int = 0) -> str:
    result = rename_values(coarse, [(name, tokenize_name(name))], random.Random(seed))
    assert result is not None, name
    return " ".join(result.tokens[name])


@pytest.mark.parametrize(
    ("coarse", "name", "pattern", "fine_type"),
    [
        ("TIME", "2007", r"\d{4}", "TIME:year"),
        ("TIME", "August 31, 2017", MONTH + r" \d{1,2} , \d{4}", "TIME:date"),
        ("TIME", "31 August 2017", r"\d{1,2} " + MONTH + r" \d{4}", "TIME:date"),
        ("TIME", "May 2002", MONTH + r" \d{4}", "TIME:month-year"),
        ("TIME", "1990s", r"1[0-9]{2}0s|20[01]0s", "TIME:decade"),
        ("TIME", "the late 1980s", r"the late \d{3}0s", "TIME:decade"),
        ("TIME", "19th century", r"(1[2-9]|2[01])(st|nd|rd|th) century", "TIME:century"),
        ("TIME", "2016–17", r"\d{4}–\d{2}", "TIME:year"),
        ("TIME", "11:59 p.m.", r"(0?[1-9]|1[0-2]):[0-5]\d p\.m\.", "TIME:clock"),
        ("NUM", "1,200,800", r"[1-9],\d{3},\d{3}", "NUM:number"),
        ("NUM", "10,000", r"[1-9]0,000", "NUM:number"),
        ("NUM", "63.93%", r"[1-9]\d\.\d[1-9] %", "NUM:percent"),
        ("NUM", "US$90 million", r"US\$ [1-9]0 million", "NUM:currency"),
        ("NUM", "$7.5 billion", r"\$ [1-9]\.[1-9] billion", "NUM:currency"),
        ("NUM", "three", r"one|two|four|five|six|seven|eight|nine", "NUM:words"),
        ("NUM", "Twelve", r"Ten|Eleven|Thirteen|Fourteen|Fifteen|Sixteen|Seventeen|Eighteen|Nineteen", "NUM:words"),
    ],
)
def test_value_rules_keep_format(coarse, name, pattern, fine_type):
    for seed in range(5):
        result = rename_values(coarse, [(name, tokenize_name(name))], random.Random(seed))
        assert result is not None
        new = " ".join(result.tokens[name])
        assert re.fullmatch(pattern, new), (name, new)
        assert new != " ".join(tokenize_name(name))
        assert result.fine_type == fine_type


def test_years_stay_plausible():
    for seed in range(30):
        year = int(_one("TIME", "1995", seed))
        assert 1965 <= year <= 2020 and year != 1995
        day = int(_one("TIME", "March 30, 1995", seed).split()[1])
        assert 1 <= day <= 28


def test_names_of_one_entity_share_the_new_value():
    names = [("2007", ["2007"]), ("November 29, 2007", tokenize_name("November 29, 2007"))]
    result = rename_values("TIME", names, random.Random(3))
    assert result is not None
    year = result.tokens["2007"][0]
    assert result.tokens["November 29, 2007"][-1] == year


def test_deterministic_per_seed():
    name = "August 31, 2017"
    assert _one("TIME", name, 7) == _one("TIME", name, 7)
    assert len({_one("TIME", name, seed) for seed in range(10)}) > 5


def test_names_without_a_rule_are_refused():
    assert rename_values("TIME", [("Middle Ages", ["Middle", "Ages"])], random.Random(0)) is None
    mixed = [("1990s", ["1990s"]), ("that decade", ["that", "decade"])]
    assert rename_values("TIME", mixed, random.Random(0)) is None


def test_accept_can_veto_values():
    seen: list[str] = []

    def accept(joined: str) -> bool:
        seen.append(joined)
        return len(seen) > 3  # the first three draws are refused

    result = rename_values("TIME", [("2007", ["2007"])], random.Random(0), accept)
    assert result is not None and " ".join(result.tokens["2007"]) == seen[-1]
    assert rename_values("TIME", [("2007", ["2007"])], random.Random(0), lambda _: False) is None


def test_real_value_entities_are_mostly_renamed(redocred_test):
    ok = total = 0
    for doc in redocred_test[:200]:
        for e, entity in enumerate(doc.entities):
            if entity.type not in ("NUM", "TIME"):
                continue
            names = {}
            for mention in entity.mentions:
                names.setdefault(mention.name, mention.tokens(doc.sents))
            total += 1
            ok += rename_values(entity.type, list(names.items()), random.Random(f"0|{doc.key}|{e}")) is not None
    assert ok / total > 0.95


def test_a_document_with_29_february_only_draws_shifts_that_keep_leap_years():
    from envre_hf.renaming.values import document_year_shift

    def leap(y):
        return y % 4 == 0 and (y % 100 != 0 or y % 400 == 0)

    feb29 = [["29", "February", "1996"], ["May", "2004"]]
    shifts = {document_year_shift(feb29, random.Random(seed)) for seed in range(200)}
    assert shifts and 0 not in shifts and all(leap(1996 + s) for s in shifts)
    assert all(-30 <= s <= 30 for s in shifts) and len(shifts) > 3
    # 2000 is a leap year but 1900 and 2100 are not: a shift of -100 is out of range anyway, so check the
    # century rule where it bites, around 1900 (1896 + 4 = 1900 is not a leap year)
    century = {document_year_shift([["Feb.", "29th", "1896"]], random.Random(seed)) for seed in range(200)}
    assert 4 not in century and all(leap(1896 + s) for s in century) and {-4, 8} <= century
    plain = {document_year_shift([["3", "February", "1996"]], random.Random(seed)) for seed in range(200)}
    assert any(not leap(1996 + s) for s in plain)  # without a 29 February any shift in range is allowed


def test_a_zero_year_shift_is_refused():
    with pytest.raises(ValueError, match="year_shift must be non-zero"):
        rename_values("TIME", [("May 2004", ["May", "2004"])], random.Random(0), year_shift=0)


# --------------------------------------------------------------------------- year offsets, year bounds


def test_years_in_reads_years_and_both_ends_of_ranges():
    from envre_hf.renaming.values import has_year, years_in

    assert years_in(["2016–17"]) == [2016, 2017] and years_in(["1998-2002"]) == [1998, 2002]
    assert years_in(["1999–01"]) == [1999, 1901]  # a two-digit end within the start's century
    assert years_in(["in", "1000", "and", "2099"]) == [1000, 2099] and years_in(["0999", "2100", "5th"]) == []
    assert has_year(["May", "2002"]) and not has_year(["May"]) and not has_year(["12345"]) and not has_year(["20:07"])


def test_document_year_shift_spans_every_offset_the_bounds_allow():
    from envre_hf.renaming.values import document_year_shift

    def shifts(names, n=600):
        return {document_year_shift(names, random.Random(seed)) for seed in range(n)}

    assert shifts([["1900"]]) == set(range(-30, 31)) - {0}
    assert shifts([["2010"]]) == set(range(-30, 11)) - {0}  # no year moves past 2020
    assert shifts([["2016–17"]]) == set(range(-30, 4)) - {0}  # a range's end counts too
    assert shifts([["1010"]]) == set(range(-10, 31)) - {0}  # none below 1000
    # a 29 February in 2000 (a leap year: divisible by 400) keeps 2000 + shift a leap year
    assert shifts([["29", "February", "2000"]]) == {s for s in range(-28, 21, 4) if s}
    assert shifts([["today"]]) == set(range(-30, 31)) - {0}  # no year at all: anything in range
    # bounds that leave nothing (1000 and 2020 both present): still one non-zero integer offset within 30
    fallback = [document_year_shift([["1000"], ["2020"]], random.Random(seed)) for seed in range(100)]
    assert all(isinstance(s, int) and 0 < abs(s) <= 30 for s in fallback) and min(fallback) < 0 < max(fallback)


def test_a_drawn_year_stays_within_30_years_and_not_past_2020_unless_it_already_was():
    from envre_hf.renaming.values import _new_year

    def draws(year):
        rng = random.Random(0)
        return {_new_year(year, rng) for _ in range(3000)}

    assert draws(1950) == set(range(1920, 1981)) - {1950}
    assert draws(2010) == set(range(1980, 2021)) - {2010}
    assert draws(2020) == set(range(1990, 2021)) - {2020}
    assert draws(2025) == set(range(1995, 2056)) - {2025}
    assert draws(1010) == set(range(1000, 1041)) - {1010}


def test_years_at_the_ends_of_the_year_range_are_years():
    for year in ("1000", "2099"):
        news = {int(_one("TIME", year, seed)) for seed in range(20)}
        assert all(0 < abs(n - int(year)) <= 30 for n in news), (year, news)


# --------------------------------------------------------------------------- ranges, decades with and without a shift


def test_year_ranges_keep_their_order_and_length():
    for seed in range(20):
        start, end = map(int, _one("TIME", "1998–2002", seed).split("–"))
        assert end - start == 4
        short = _one("TIME", "2016–17", seed)
        start, end = int(short[:4]), int(short[5:])
        assert len(short) == 7 and (end - start % 100) % 100 == 1


def test_decades_move_by_10_to_50_years_and_not_past_the_2010s():
    def decades(name):
        return {_one("TIME", name, seed) for seed in range(300)}

    assert decades("1990s") == {"1940s", "1950s", "1960s", "1970s", "1980s", "2000s", "2010s"}
    assert decades("2010s") == {"1960s", "1970s", "1980s", "1990s", "2000s"}
    assert decades("80s") == {"50s", "60s", "70s", "90s", "00s"}
    assert decades("mid-1990s") <= {f"mid-{d}s" for d in range(1940, 2011, 10)}


@pytest.mark.parametrize(("shift", "new"), [(3, "2000s"), (-3, "1980s"), (14, "2000s"), (-16, "1970s"), (27, "2020s")])
def test_decades_move_by_the_document_shift_rounded_to_ten(shift, new):
    result = rename_values("TIME", [("1990s", ["1990s"])], random.Random(0), year_shift=shift)
    assert result is not None and result.tokens["1990s"] == [new]


def test_with_a_year_shift_months_and_days_stay():
    names = [("August 31 , 2017", ["August", "31", ",", "2017"]), ("Aug. 31st 2017", ["Aug.", "31st", "2017"])]
    result = rename_values("TIME", names, random.Random(0), year_shift=-3)
    assert result is not None
    assert result.tokens["August 31 , 2017"] == ["August", "31", ",", "2014"]
    assert result.tokens["Aug. 31st 2017"] == ["Aug.", "31st", "2014"]


# --------------------------------------------------------------------------- dates, days, ordinals, centuries


def test_abbreviated_months_are_months_and_days_next_to_them_days():
    for seed in range(40):
        result = rename_values("TIME", [("Aug. 31 , 2017", ["Aug.", "31", ",", "2017"])], random.Random(seed))
        assert result is not None and result.fine_type == "TIME:date"
        month, day, comma, year = result.tokens["Aug. 31 , 2017"]
        assert re.fullmatch(r"(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)\.?", month) and month != "Aug."
        assert 1 <= int(day) <= 28 and comma == ","
        month = _one("TIME", "Sept. 1998", seed).split()[0]
        assert month == "May" or re.fullmatch(r"[A-Z][a-z]{2}\.", month)
    assert rename_values("TIME", [("Dec", ["Dec"])], random.Random(0)) is None  # an abbreviation alone is no month


def test_day_numbers_and_day_ordinals_stay_valid_days():
    for seed in range(120):
        result = rename_values("TIME", [("March 1 , 1995", ["March", "1", ",", "1995"])], random.Random(seed))
        assert result is not None and result.fine_type == "TIME:date"
        assert 1 <= int(result.tokens["March 1 , 1995"][1]) <= 28
        day = _one("TIME", "March 30th , 1995", seed).split()[1]
        assert re.fullmatch(r"\d{1,2}(st|nd|rd|th)", day) and 1 <= int(day[:-2]) <= 28
        day = _one("TIME", "30th March", seed).split()[0]
        assert 1 <= int(day[:-2]) <= 28


def test_centuries_stay_between_the_12th_and_the_21st():
    news = {_one("TIME", "12th century", seed) for seed in range(200)}
    assert news == {f"{n}th century" for n in range(13, 20)} | {"20th century", "21st century"}


def test_ordinals_get_english_suffixes():
    from envre_hf.renaming.values import _ordinal_suffix

    got = [n for n in (1, 2, 3, 4, 11, 12, 13, 21, 22, 23, 101, 111, 112, 121)]
    assert [f"{n}{_ordinal_suffix(n)}" for n in got] == [
        "1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd", "23rd", "101st", "111th", "112th", "121st",
    ]  # fmt: skip
    assert re.fullmatch(r"\d+(st|nd|rd|th)", _one("NUM", "5th")) and _one("NUM", "5th") != "5th"


def test_numbers_in_time_names_keep_their_digit_count():
    for seed in range(30):
        number, unit = _one("TIME", "5 years", seed).split()
        assert len(number) == 1 and number not in ("1", "5") and unit == "years"


def test_no_new_leading_zero():
    for seed in range(60):
        assert not _one("NUM", "305", seed).startswith("0")


# --------------------------------------------------------------------------- counts, collisions


def test_a_count_of_one_makes_the_noun_inside_the_name_plural_and_nothing_else():
    for seed in range(10):
        count, noun, later = _one("NUM", "one year later", seed).split()
        assert count != "one" and (noun, later) == ("years", "later")
        assert _one("NUM", "one year", seed).split()[1] == "years"
        assert _one("NUM", "8 km", seed).split()[1] == "km"  # not a count of one: the unit stays


def test_a_new_name_never_equals_another_original_name_of_the_entity():
    # with a shift of one, "2007" could only become "2008", the entity's other name: refused
    names = [("2007", ["2007"]), ("2008", ["2008"])]
    assert rename_values("TIME", names, random.Random(0), year_shift=1) is None
    result = rename_values("TIME", names, random.Random(0), year_shift=2)
    assert result is not None and result.tokens == {"2007": ["2009"], "2008": ["2010"]}


def test_an_ordinal_is_a_day_only_next_to_a_month_and_a_century_only_before_century():
    # "30th" alone (an anniversary, a season) is no day: it may grow past 28; "19th -" ends the name: no century
    assert max(int(_one("TIME", "30th", seed)[:-2]) for seed in range(40)) > 31
    result = rename_values("TIME", [("19th -", ["19th", "-"])], random.Random(0))
    assert result is not None and result.fine_type != "TIME:century"
