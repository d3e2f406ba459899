"""Joda-Time DateTimeFormat patterns (path.format): literals, letters and counts, text in English, errors."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from kafka_s3.core.errors import ConfigError
from kafka_s3.core.partitioners.joda import compile_pattern

LOS_ANGELES = ZoneInfo("America/Los_Angeles")
# A Thursday afternoon in daylight time: day 92 of 2015, ISO week 14.
THURSDAY = datetime(2015, 4, 2, 13, 5, 9, 7_000, tzinfo=LOS_ANGELES)


def render(pattern: str, moment: datetime = THURSDAY, locale: str = "en-US") -> str:
    return compile_pattern(pattern, locale)(moment)


@pytest.mark.parametrize(
    "pattern, expected",
    [
        ("G", "AD"),
        ("GGGG", "AD"),
        ("C", "20"),
        ("CCC", "020"),
        ("Y", "2015"),
        ("YY", "15"),
        ("YYY", "2015"),
        ("YYYY", "2015"),
        ("YYYYYY", "002015"),
        ("y", "2015"),
        ("yy", "15"),
        ("yyyy", "2015"),
        ("x", "2015"),
        ("xx", "15"),
        ("w", "14"),
        ("www", "014"),
        ("e", "4"),
        ("ee", "04"),
        ("E", "Thu"),
        ("EEE", "Thu"),
        ("EEEE", "Thursday"),
        ("D", "92"),
        ("DDD", "092"),
        ("M", "4"),
        ("MM", "04"),
        ("MMM", "Apr"),
        ("MMMM", "April"),
        ("MMMMMM", "April"),
        ("d", "2"),
        ("dd", "02"),
        ("a", "PM"),
        ("K", "1"),
        ("KK", "01"),
        ("h", "1"),
        ("hh", "01"),
        ("H", "13"),
        ("HHH", "013"),
        ("k", "13"),
        ("m", "5"),
        ("mm", "05"),
        ("s", "9"),
        ("ss", "09"),
        ("S", "0"),
        ("SS", "00"),
        ("SSS", "007"),
        ("SSSS", "0070"),
        ("z", "PDT"),
        ("Z", "-0700"),
        ("ZZ", "-07:00"),
        ("ZZZ", "America/Los_Angeles"),
    ],
)
def test_every_letter_with_jodas_count_semantics(pattern, expected):
    assert render(pattern) == expected


@pytest.mark.parametrize(
    "hour, expected",
    [(0, "AM 0 12 0 24"), (11, "AM 11 11 11 11"), (12, "PM 0 12 12 12"), (23, "PM 11 11 23 23")],
)
def test_the_four_hour_letters_around_midnight_and_noon(hour, expected):
    assert render("a K h H k", THURSDAY.replace(hour=hour)) == expected


def test_month_and_day_names_in_english():
    months = [render("MMM MMMM", datetime(2015, month, 1, tzinfo=LOS_ANGELES)) for month in range(1, 13)]
    days = [render("E EEEE", datetime(2015, 3, day, tzinfo=LOS_ANGELES)) for day in range(2, 9)]

    assert months[0] == "Jan January" and months[8] == "Sep September" and months[11] == "Dec December"
    assert days == [
        "Mon Monday",
        "Tue Tuesday",
        "Wed Wednesday",
        "Thu Thursday",
        "Fri Friday",
        "Sat Saturday",
        "Sun Sunday",
    ]


def test_week_year_differs_from_year_around_new_year():
    assert render("xxxx-'W'ww-e yyyy-MM-dd", datetime(2016, 1, 1, tzinfo=LOS_ANGELES)) == "2015-W53-5 2016-01-01"


def test_offsets_and_names_in_utc_and_winter():
    assert render("Z ZZ z ZZZ", datetime(2015, 1, 1, tzinfo=ZoneInfo("UTC"))) == "+0000 +00:00 UTC UTC"
    assert render("Z z", datetime(2015, 1, 1, tzinfo=LOS_ANGELES)) == "-0800 PST"
    assert render("Z ZZ", datetime(2015, 1, 1, tzinfo=ZoneInfo("Asia/Kolkata"))) == "+0530 +05:30"


@pytest.mark.parametrize(
    "pattern, expected",
    [
        ("'year'=YYYY/'month'=MM/'day'=dd/'hour'=HH", "year=2015/month=04/day=02/hour=13"),
        ("YYYY-MM-dd", "2015-04-02"),
        ("'o''clock' HH", "o'clock 13"),
        ("HH''mm", "13'05"),
        ("''", "'"),
        ("'it''s' 'YYYY'", "it's YYYY"),
        ("HH'h'mm", "13h05"),
        ("dd.MM_é", "02.04_é"),
        ("", ""),
    ],
)
def test_literals_quotes_and_escaped_quotes(pattern, expected):
    assert render(pattern) == expected


@pytest.mark.issue(16, item=7)
@pytest.mark.parametrize("pattern, index", [("'unterminated YYYY", 0), ("'year'=YYYY/'month=MM", 12), ("YYYY'''", 6)])
def test_an_unterminated_quote_is_rejected_with_its_position(pattern, index):
    """Joda lets an unclosed quote run to the end (``'month=MM`` would write ``month=MM`` literally): kafka-s3 rejects
    it, naming path.format and where the quote opens."""
    with pytest.raises(ConfigError) as error:
        compile_pattern(pattern, "en-US")
    assert error.value.key == "path.format"
    assert f"unterminated quote at index {index}" in str(error.value)


@pytest.mark.parametrize(
    "pattern, letter, index",
    [("year='YYYY'", "r", 3), ("YYYY-MM-ddTHH", "T", 10), ("'day'=dd/b", "b", 9), ("q", "q", 0)],
)
def test_unknown_letters_are_rejected_with_their_position(pattern, letter, index):
    with pytest.raises(ConfigError) as error:
        compile_pattern(pattern, "en-US")

    assert error.value.key == "path.format"
    assert f"illegal pattern letter {letter!r} at index {index}" in str(error.value)
    assert pattern in str(error.value)


def test_full_zone_names_are_rejected_rather_than_guessed():
    with pytest.raises(ConfigError, match="zzzz at index 5") as error:
        compile_pattern("HH'h'zzzz", "en-US")

    assert error.value.key == "path.format"


@pytest.mark.parametrize("locale", ["en", "en-US", "en_GB", "EN-au"])
def test_english_locales_render_text(locale):
    assert render("EEEE d MMMM", locale=locale) == "Thursday 2 April"


@pytest.mark.parametrize("pattern", ["MMM", "EEEE", "a", "G", "z"])
def test_text_fields_in_a_locale_we_cannot_render_are_a_config_error(pattern):
    with pytest.raises(ConfigError) as error:
        compile_pattern(f"'x'={pattern}", "fr-FR")

    assert error.value.key == "locale" and "fr-FR" in str(error.value) and pattern in str(error.value)


def test_numeric_patterns_work_in_any_locale():
    assert render("'year'=YYYY/'month'=MM", locale="fr-FR") == "year=2015/month=04"
