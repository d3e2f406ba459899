"""ISO-8601 date-times as Joda-Time's ``ISODateTimeFormat.dateTimeParser()`` reads them.

Confluent's RecordField extractor parses string timestamps with that parser, so the strings it accepts (and the
instants they mean) are the ones accepted here:

    datetime          = time | date-opt-time
    time              = 'T' time-element [offset]
    date-opt-time     = date-element ['T' [time-element] [offset]]
    date-element      = yyyy ['-' MM ['-' dd]] | yyyy '-' DDD | xxxx '-W' ww ['-' e]
    time-element      = HH [':' mm [':' ss] ] with a fraction ('.' or ',') of the last field given
    offset            = 'Z' | ('+' | '-') HH [':' mm [':' ss [('.' | ',') SSS]]]  (colons all present or all absent)

Omitted fields take their first value (January, day 1, Monday, midnight); a time alone is on 1970-01-01. Letters
match in either case, as in Joda.
"""

from __future__ import annotations

import re
from datetime import date

_DATE_AND_TIME = re.compile(r"(?P<date>[^Tt]*)(?:[Tt](?P<time>.*))?", re.DOTALL)
_DATE = re.compile(
    r"""
      (?P<year>[+-]?\d{1,9}) (?: -(?P<month>\d{2}) (?: -(?P<day>\d{2}) )? )?
    | (?P<week_year>[+-]?\d{1,9}) -W(?P<week>\d{2}) (?: -(?P<weekday>\d) )?
    | (?P<ordinal_year>[+-]?\d{1,9}) -(?P<year_day>\d{3})
    """,
    re.VERBOSE | re.IGNORECASE,
)
_TIME_AND_OFFSET = re.compile(
    r"""
    (?:
      (?P<hour>\d{2})
      (?: [.,](?P<hour_fraction>\d{1,9})
        | :(?P<minute>\d{2})
          (?: [.,](?P<minute_fraction>\d{1,9})
            | :(?P<second>\d{2}) (?: [.,](?P<second_fraction>\d{1,9}) )?
          )?
      )?
    )?
    (?:
      (?P<utc>Z)
    | (?P<sign>[+-]) (?P<offset_hours>\d{2})
      (?: (?P<colon>:)? (?P<offset_minutes>\d{2})
        (?: (?(colon):) (?P<offset_seconds>\d{2})
          (?: (?(colon)[.,]) (?P<offset_millis>\d{3}) )?
        )?
      )?
    )?
    """,
    re.VERBOSE | re.IGNORECASE,
)
_EPOCH_DAY = date(1970, 1, 1).toordinal()
_DAY_MS = 86_400_000
_HOUR_MS = 3_600_000
_MINUTE_MS = 60_000


def parse_millis(text: str) -> int:
    """Milliseconds since the epoch of an ISO-8601 date-time; without an offset the time is UTC.

    Raises ``ValueError`` for text Joda's parser rejects and for years outside 1-9999.
    """
    parts = _DATE_AND_TIME.fullmatch(text)
    assert parts is not None  # every text matches: both groups accept anything
    date_text, time_text = parts["date"], parts["time"] or ""
    day = _parse_date(date_text, text) if date_text else date(1970, 1, 1)
    time = _TIME_AND_OFFSET.fullmatch(time_text)
    if time is None or (not date_text and time["hour"] is None):
        raise ValueError(f"not an ISO-8601 date-time: {text!r}")
    return (day.toordinal() - _EPOCH_DAY) * _DAY_MS + _time_of_day_ms(time) - _offset_ms(time)


def _parse_date(date_text: str, text: str) -> date:
    match = _DATE.fullmatch(date_text)
    if match is None:
        raise ValueError(f"not an ISO-8601 date-time: {text!r}")
    if match["week_year"] is not None:
        return date.fromisocalendar(int(match["week_year"]), int(match["week"]), int(match["weekday"] or 1))
    if match["ordinal_year"] is not None:
        year, year_day = int(match["ordinal_year"]), int(match["year_day"])
        day = date.fromordinal(date(year, 1, 1).toordinal() + year_day - 1)
        if day.year != year:
            raise ValueError(f"day of year {year_day} does not exist in {year}: {text!r}")
        return day
    return date(int(match["year"]), int(match["month"] or 1), int(match["day"] or 1))


def _time_of_day_ms(match: re.Match[str]) -> int:
    hour, minute, second = (int(match[name] or 0) for name in ("hour", "minute", "second"))
    if hour > 23 or minute > 59 or second > 59:
        raise ValueError(f"time of day out of range: {match.string!r}")
    fraction_ms = (
        _fraction_ms(match["hour_fraction"], _HOUR_MS)
        + _fraction_ms(match["minute_fraction"], _MINUTE_MS)
        + _fraction_ms(match["second_fraction"], 1000)
    )
    return hour * _HOUR_MS + minute * _MINUTE_MS + second * 1000 + fraction_ms


def _fraction_ms(digits: str | None, unit_ms: int) -> int:
    """A decimal fraction of a unit, truncated to the millisecond (Joda keeps no finer precision)."""
    return int(digits) * unit_ms // 10 ** len(digits) if digits else 0


def _offset_ms(match: re.Match[str]) -> int:
    if match["sign"] is None:
        return 0
    hours, minutes, seconds, millis = (
        int(match[name] or 0) for name in ("offset_hours", "offset_minutes", "offset_seconds", "offset_millis")
    )
    if hours > 23 or minutes > 59 or seconds > 59:
        raise ValueError(f"offset out of range: {match.string!r}")
    magnitude = hours * _HOUR_MS + minutes * _MINUTE_MS + seconds * 1000 + millis
    return -magnitude if match["sign"] == "-" else magnitude
