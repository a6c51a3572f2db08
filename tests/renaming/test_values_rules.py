"""The bounds of the NUM/TIME value rules, checked over many seeds (each rule is a random draw).

Every test asserts a promise of docs/renaming.md / docs/coherence.md on the set of outcomes: a bound is
never crossed and, where the rule promises a range, both ends are drawn.
"""

from __future__ import annotations

import random
import re

import pytest

from envre_hf.renaming import rename_values
from envre_hf.renaming.values import document_year_shift, has_year, years_in

SEEDS = range(400)


def _draws(coarse: str, tokens: list[str], seeds=SEEDS, **kw) -> list[list[str]]:
    name = " ".join(tokens)
    out = []
    for seed in seeds:
        result = rename_values(coarse, [(name, tokens)], random.Random(seed), **kw)
        assert result is not None, (name, seed)
        out.append(result.tokens[name])
    return out


def _shifts(names: list[list[str]], n: int = 2000, max_shift: int = 30) -> set[int]:
    return {document_year_shift(names, random.Random(seed), max_shift) for seed in range(n)}


# --- years found in a name -------------------------------------------------------------------------


def test_has_year_needs_a_four_digit_year():
    assert has_year(["March", "12"]) is False
    assert has_year(["the", "1990s"]) is True
    assert has_year(["November", "29", ",", "2007"]) is True
    assert has_year(["12345"]) is False


def test_a_name_without_year_still_changes_under_a_document_shift():
    """Only names with a year keep month and day; ``March 12`` must get a new month or day."""
    for seed in range(20):
        result = rename_values("TIME", [("March 12", ["March", "12"])], random.Random(seed), year_shift=5)
        assert result is not None
        assert result.tokens["March 12"] != ["March", "12"]


def test_two_digit_range_end_is_in_the_start_century():
    assert years_in(["2016–17"]) == [2016, 2017]
    assert years_in(["1995–2003"]) == [1995, 2003]
    assert years_in(["1000", "2099", "999", "2100", "5th"]) == [1000, 2099]


def test_range_ending_2020_caps_the_document_shift():
    """``2016–20`` ends in 2020: no shift may move it past 2020."""
    shifts = _shifts([["2016–20"]], n=300)
    assert shifts and max(shifts) < 0


# --- the document year shift ------------------------------------------------------------------------


def test_feb29_of_a_400_year_leap_year_stays_on_leap_years():
    shifts = _shifts([["February", "29", ",", "2000"]], n=500)
    assert all((2000 + s) % 4 == 0 for s in shifts), sorted(shifts)
    assert shifts == {s for s in range(-28, 21, 4) if s}


def test_shift_stays_within_max_shift_and_reaches_both_ends():
    shifts = _shifts([["1950"]])
    assert min(shifts) == -30 and max(shifts) == 30 and 0 not in shifts


def test_shift_caps_at_2020_and_reaches_it():
    shifts = _shifts([["2000"]])
    assert max(shifts) == 20 and min(shifts) == -30


def test_shift_never_moves_a_year_below_1000():
    shifts = _shifts([["1010"]])
    assert min(shifts) == -10 and max(shifts) == 30


def test_fallback_shift_stays_within_max_shift():
    """1000 and 2020 in one document leave no allowed shift: the fallback is still within max_shift."""
    shifts = _shifts([["1000"], ["2020"]], n=400)
    assert all(1 <= abs(s) <= 30 for s in shifts), sorted(shifts)
    assert min(shifts) < 0 < max(shifts)


# --- per-entity year draws ----------------------------------------------------------------------------


def test_year_draw_within_30_both_sides():
    years = {int(t[0]) for t in _draws("TIME", ["1950"], seeds=range(1500))}
    assert min(years) == 1920 and max(years) == 1980 and 1950 not in years


def test_year_draw_capped_at_2020():
    years = {int(t[0]) for t in _draws("TIME", ["2010"], seeds=range(1000))}
    assert max(years) == 2020 and min(years) == 1980


def test_year_2020_draws_stay_at_or_below_2020():
    years = {int(t[0]) for t in _draws("TIME", ["2020"], seeds=range(1000))}
    assert max(years) == 2019 and min(years) == 1990


def test_year_past_2020_may_move_30_years_either_way():
    years = {int(t[0]) for t in _draws("TIME", ["2050"], seeds=range(1500))}
    assert max(years) == 2080 and min(years) == 2020 and 2050 not in years


def test_year_ranges_keep_their_span():
    for name, span in (("2016–17", 1), ("1995–2003", 8), ("1998–99", 1)):
        for seed in range(40):
            new = _draws("TIME", [name], seeds=[seed])[0][0]
            start, end = re.fullmatch(r"(\d{4})–(\d+)", new).groups()
            if len(end) == 2:
                end = start[:2] + end if end >= start[2:] else str(int(start[:2]) + 1) + end
            assert int(end) - int(start) == span, (name, new)


def test_year_1000_is_a_year():
    result = rename_values("TIME", [("1000", ["1000"])], random.Random(0), year_shift=5)
    assert result is not None and result.fine_type == "TIME:year" and result.tokens["1000"] == ["1005"]


def test_year_2099_is_a_year():
    result = rename_values("TIME", [("2099", ["2099"])], random.Random(0), year_shift=-7)
    assert result is not None and result.fine_type == "TIME:year"
    assert result.tokens["2099"] == ["2092"]


# --- months, days, ordinals, centuries ------------------------------------------------------------------


def test_lone_month_abbreviation_is_not_a_month():
    """A one-token ``Jan``/``Dec.`` is not read as a month (too ambiguous alone): no rule applies."""
    assert rename_values("TIME", [("Jan", ["Jan"])], random.Random(0)) is None
    assert rename_values("TIME", [("Dec.", ["Dec."])], random.Random(0)) is None
    assert rename_values("TIME", [("Jan 5", ["Jan", "5"])], random.Random(0)) is not None


def test_ordinal_day_after_a_month_is_a_valid_day():
    results = [
        rename_values("TIME", [("March 20th", ["March", "20th"])], random.Random(seed)) for seed in range(400)
    ]
    assert all(r is not None and r.fine_type == "TIME:day-month" for r in results)
    days = {int(re.match(r"\d+", r.tokens["March 20th"][1]).group()) for r in results}
    assert max(days) == 28 and min(days) == 1


def test_day_31_is_a_day():
    results = [rename_values("TIME", [("May 31", ["May", "31"])], random.Random(s)) for s in range(200)]
    assert all(r is not None and r.fine_type == "TIME:day-month" for r in results)
    assert max(int(r.tokens["May 31"][1]) for r in results) <= 28


def test_an_ordinal_before_a_final_hyphen_is_no_century():
    """``19th - century`` is a century; a trailing hyphen with nothing after it does not make one."""
    assert rename_values("TIME", [("19th - century", ["19th", "-", "century"])], random.Random(0)).fine_type == (
        "TIME:century"
    )
    results = [rename_values("TIME", [("19th -", ["19th", "-"])], random.Random(s)) for s in range(100)]
    assert all(r is not None and r.fine_type != "TIME:century" for r in results)


def test_ordinal_next_to_a_month_in_a_num_is_an_ordinal():
    """Days exist only in TIME: a NUM ordinal beside a month word keeps the ordinal range."""
    results = [rename_values("NUM", [("15th May", ["15th", "May"])], random.Random(s)) for s in range(200)]
    assert all(r is not None and r.fine_type == "NUM:ordinal" for r in results)
    values = {int(re.match(r"\d+", r.tokens["15th May"][0]).group()) for r in results}
    assert max(values) > 28


def test_century_draws_stay_in_12th_to_21st():
    for value in (12, 19):
        name = f"{value}th century"
        got = {int(re.match(r"\d+", t[0]).group()) for t in _draws("TIME", [f"{value}th", "century"])}
        assert min(got) >= 12 and max(got) == 21 and value not in got, (name, sorted(got))
    got19 = {int(re.match(r"\d+", t[0]).group()) for t in _draws("TIME", ["19th", "century"])}
    assert min(got19) == 12


def test_year_after_a_kept_day_in_one_token_still_moves():
    """Under a document shift the day is kept, but a year later in the same token still moves."""
    result = rename_values("TIME", [("May 5th/1990", ["May", "5th/1990"])], random.Random(0), year_shift=5)
    assert result is not None and result.tokens["May 5th/1990"] == ["May", "5th/1995"]


def test_ordinal_suffixes_agree_with_the_new_number():
    """``2nd``, ``12th``, ``22nd``, ``13th``: the suffix follows the drawn number, never the original's."""

    def suffix(n: int) -> str:
        if n % 100 in (11, 12, 13):
            return "th"
        return {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")

    got = {t[0] for t in _draws("NUM", ["20th"])} | {t[0] for t in _draws("NUM", ["5th"], seeds=range(100))}
    got |= {t[0] for t in _draws("NUM", ["70th"], seeds=range(1000))}
    numbers = {int(re.match(r"\d+", g).group()) for g in got}
    assert {1, 2, 3, 12, 13, 21, 22, 23, 111, 112, 113, 121, 122} <= numbers
    for g in got:
        n = int(re.match(r"\d+", g).group())
        assert g == f"{n}{suffix(n)}", g


def test_number_words_keep_their_case():
    for seed in range(30):
        upper = _draws("NUM", ["TWO"], seeds=[seed])[0][0]
        title = _draws("NUM", ["Two"], seeds=[seed])[0][0]
        assert upper.isupper() and title[0].isupper() and title[1:].islower()


# --- decades ----------------------------------------------------------------------------------------------


def test_four_digit_decades_move_10_to_50_years_and_cap_at_2010s():
    got = {t[0] for t in _draws("TIME", ["1950s"])}
    assert got == {f"{d}s" for d in (1900, 1910, 1920, 1930, 1940, 1960, 1970, 1980)}
    got2000 = {t[0] for t in _draws("TIME", ["2000s"])}
    assert got2000 == {f"{d}s" for d in (1950, 1960, 1970, 1980, 1990, 2010)}
    got2010 = {t[0] for t in _draws("TIME", ["2010s"])}
    assert got2010 == {f"{d}s" for d in (1960, 1970, 1980, 1990, 2000)}


def test_decades_follow_the_document_shift_rounded_to_ten():
    for shift, new in ((23, "2010s"), (4, "2000s"), (-3, "1980s"), (-27, "1960s"), (15, "2010s")):
        result = rename_values("TIME", [("1990s", ["1990s"])], random.Random(0), year_shift=shift)
        assert result is not None and result.tokens["1990s"] == [new], shift


def test_two_digit_decades_move_10_to_30_years():
    got = {t[0] for t in _draws("TIME", ["50s"])}
    assert got == {"20s", "30s", "40s", "60s", "70s"}


# --- counts of one ------------------------------------------------------------------------------------


def test_count_of_one_pluralises_its_noun():
    for tokens in (["one", "year"], ["one", "year", "ago"], ["1", "year", "ago"]):
        name = " ".join(tokens)
        for seed in range(30):
            result = rename_values("TIME", [(name, tokens)], random.Random(seed))
            assert result is not None
            new = result.tokens[name]
            assert new[1] == "years" and new[2:] == tokens[2:], (tokens, new)


def test_a_decade_past_the_2010s_is_not_pulled_back_to_them():
    """The 2010s cap applies to decades at or before it; the 2020s may move either way without it."""
    got = {t[0] for t in _draws("TIME", ["2020s"])}
    assert "2030s" in got and "2050s" in got and got <= {f"{d}s" for d in (1970, 1980, 1990, 2000, 2010, 2030, 2040, 2050)}


def test_a_plain_ordinal_is_drawn_up_to_twice_its_value():
    got = {int(re.match(r"\d+", t[0]).group()) for t in _draws("NUM", ["7th"])}
    assert max(got) == 14 and min(got) == 1 and 7 not in got


def test_an_upper_case_number_word_stays_upper_case():
    got = {t[0] for t in _draws("NUM", ["THREE"])}
    assert got and all(word.isupper() and word.isalpha() for word in got) and "THREE" not in got


def test_inner_digits_may_become_zero_but_the_first_and_last_never_do():
    got = [t[0] for t in _draws("NUM", ["3051"])]
    assert all(len(v) == 4 and v[0] != "0" and v[-1] != "0" for v in got)
    assert any(v[1] == "0" for v in got) and any(v[2] == "0" for v in got)


def test_an_ordinal_two_tokens_after_a_month_is_a_day():
    days = [int(t[2][:-2]) for t in _draws("TIME", ["March", "the", "25th"], year_shift=None)]
    assert max(days) <= 28 and min(days) >= 1


def test_an_ordinal_above_31_beside_a_month_is_no_day():
    got = [int(t[0][:-2]) for t in _draws("TIME", ["32nd", "March"])]
    assert max(got) > 28  # an ordinal draws up to twice its value; a day would stop at 28


@pytest.mark.parametrize("tokens", [["25th", "of", "March"], ["25", "of", "March"], ["March", "the", "25"]])
def test_a_day_two_tokens_from_its_month_stays_a_valid_day(tokens):
    at = 0 if tokens[0].startswith("25") else 2
    days = [int(re.match(r"\d+", t[at]).group()) for t in _draws("TIME", tokens)]
    assert 1 <= min(days) and max(days) <= 28


def test_an_unpadded_day_is_never_given_a_leading_zero():
    days = [t[0] for t in _draws("TIME", ["5", "March"])]
    assert all(not d.startswith("0") for d in days) and any(len(d) == 1 for d in days)
    padded = [t[0] for t in _draws("TIME", ["05", "March"])]
    assert all(len(d) == 2 for d in padded)
