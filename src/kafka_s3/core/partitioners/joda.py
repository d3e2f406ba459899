"""Joda-Time ``DateTimeFormat`` patterns: the syntax of Confluent's ``path.format``.

Confluent formats time partitions with ``DateTimeFormat.forPattern(path.format)``, so directory names only match
Confluent's when the pattern is read exactly as Joda reads it: runs of one ASCII letter are fields whose count sets
the width (numbers) or the style (text), every other character is literal text, single quotes quote letters and
``''`` is a quote. Any unquoted letter Joda does not know is an error; that is how ``year='YYYY'`` is rejected
(the bare ``r`` of ``year``), so the same mistake fails here as it does in Kafka Connect.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from datetime import datetime

from kafka_s3.core.errors import ConfigError
from kafka_s3.core.java_time import DAYS, MONTHS

PATH_FORMAT_KEY = "path.format"
LOCALE_KEY = "locale"

Formatter = Callable[[datetime], str]
"""Renders one zone-aware datetime (the instant in the partitioner's time zone) as directory text."""


# English calendar text (MONTHS, DAYS: Java's DateFormatSymbols for "en", as java_time prints them too); Joda
# numbers days from Monday.
ERA = "AD"  # every year from 1 to 9999

# Numeric fields: zero-padded to the letter count, never truncated.
_NUMBERS: dict[str, Callable[[datetime], int]] = {
    "C": lambda moment: moment.year // 100,  # century of era
    "w": lambda moment: moment.isocalendar()[1],  # ISO week of the week-based year
    "e": lambda moment: moment.isoweekday(),  # 1 = Monday
    "D": lambda moment: moment.timetuple().tm_yday,
    "M": lambda moment: moment.month,  # MMM and longer are names
    "d": lambda moment: moment.day,
    "K": lambda moment: moment.hour % 12,  # 0-11
    "h": lambda moment: moment.hour % 12 or 12,  # 1-12
    "H": lambda moment: moment.hour,  # 0-23
    "k": lambda moment: moment.hour or 24,  # 1-24
    "m": lambda moment: moment.minute,
    "s": lambda moment: moment.second,
}
# Year fields: like numbers, except that a count of 2 prints the last two digits.
_YEARS: dict[str, Callable[[datetime], int]] = {
    "y": lambda moment: moment.year,
    "Y": lambda moment: moment.year,  # year of era: the same for years 1-9999
    "x": lambda moment: moment.isocalendar()[0],  # ISO week-based year
}


def compile_pattern(pattern: str, locale: str) -> Formatter:
    """Compile a Joda pattern once; the returned function formats datetimes with it.

    Raises :class:`ConfigError` naming ``path.format`` for an unknown letter (with its 0-based index) or ``zzzz`` (full
    zone names), and naming ``locale`` when the pattern has text fields and the locale is not English: month or day
    names silently rendered in another language would make directories Confluent never writes.
    """
    pieces: list[Formatter] = []
    text_letters = []
    for token in _tokens(pattern):
        if isinstance(token, str):
            pieces.append(_literal(token))
            continue
        letter, count, position = token
        if _is_text(letter, count):
            text_letters.append(letter * count)
        pieces.append(_field(pattern, letter, count, position))
    if text_letters and not _is_english(locale):
        raise ConfigError(
            f"locale={locale!r}: kafka-s3 renders month, day, era, AM/PM and zone names in English only (locale en, "
            f"en-US, en-GB...), and path.format={pattern!r} uses {', '.join(text_letters)}",
            key=LOCALE_KEY,
        )
    return lambda moment: "".join(piece(moment) for piece in pieces)


def _is_text(letter: str, count: int) -> bool:
    """Fields Joda prints as words, which depend on the locale."""
    return letter in "GEaz" or (letter == "M" and count >= 3)


def _is_english(locale: str) -> bool:
    return re.split(r"[-_]", locale.strip(), maxsplit=1)[0].lower() == "en"


def _tokens(pattern: str) -> Iterator[str | tuple[str, int, int]]:
    """Yield ``(letter, count, position)`` for fields and the text of literals, as Joda's
    ``DateTimeFormat.parseToken`` splits a pattern. An unclosed quote, which Joda lets run to the end (so
    ``'month=MM`` writes ``month=MM`` literally), is a :class:`ConfigError` naming ``path.format`` instead."""
    i, length = 0, len(pattern)
    while i < length:
        char = pattern[i]
        if _is_letter(char):
            start = i
            while i + 1 < length and pattern[i + 1] == char:
                i += 1
            yield char, i - start + 1, start
            i += 1
            continue
        text, quoted, opened = [], False, 0
        while i < length:
            char = pattern[i]
            if char == "'":
                if i + 1 < length and pattern[i + 1] == "'":
                    text.append("'")
                    i += 1
                else:
                    quoted, opened = not quoted, i
            elif not quoted and _is_letter(char):
                break
            else:
                text.append(char)
            i += 1
        if quoted:
            raise ConfigError(
                f"Invalid value {pattern!r} for configuration {PATH_FORMAT_KEY}: unterminated quote at index {opened} "
                "(the rest of the pattern would be written literally); close it, e.g. 'month'=MM, and write a quote "
                "itself as ''",
                key=PATH_FORMAT_KEY,
            )
        yield "".join(text)


def _is_letter(char: str) -> bool:
    return "A" <= char <= "Z" or "a" <= char <= "z"


def _literal(text: str) -> Formatter:
    return lambda moment: text


def _padded(value: int, width: int) -> str:
    """Joda's ``appendPaddedInteger``: the sign, then the digits zero-padded to ``width``."""
    return ("-" if value < 0 else "") + str(abs(value)).zfill(width)


def _number(getter: Callable[[datetime], int], width: int) -> Formatter:
    return lambda moment: _padded(getter(moment), width)


def _two_digits(getter: Callable[[datetime], int]) -> Formatter:
    return lambda moment: _padded(abs(getter(moment)) % 100, 2)


def _offset(moment: datetime, separator: str) -> str:
    """``+HHmm`` / ``+HH:mm``, seconds of historical offsets dropped (Joda prints two fields)."""
    offset = moment.utcoffset()
    assert offset is not None  # formatters get zone-aware datetimes
    total = int(offset.total_seconds())
    sign = "-" if total < 0 else "+"
    minutes = abs(total) // 60
    return f"{sign}{minutes // 60:02d}{separator}{minutes % 60:02d}"


def _zone_name(moment: datetime) -> str:
    name = moment.tzname()
    assert name is not None  # formatters get zone-aware datetimes
    return name


def _fraction(moment: datetime, count: int) -> str:
    """The first ``count`` digits of the fraction of the second (truncated, zeros past the milliseconds)."""
    return str(moment.microsecond // 1000 * 10**count // 1000).zfill(count)


def _field(pattern: str, letter: str, count: int, position: int) -> Formatter:
    """The formatter of one run of a pattern letter, as Joda's ``DateTimeFormat.parsePatternTo`` builds it."""
    if letter == "M" and count >= 3:
        months = MONTHS if count >= 4 else tuple(month[:3] for month in MONTHS)
        return lambda moment: months[moment.month - 1]
    if letter in _NUMBERS:
        return _number(_NUMBERS[letter], count)
    if letter in _YEARS:
        return _two_digits(_YEARS[letter]) if count == 2 else _number(_YEARS[letter], count)
    if letter == "E":
        days = DAYS if count >= 4 else tuple(day[:3] for day in DAYS)
        return lambda moment: days[moment.weekday()]
    if letter == "G":
        return _literal(ERA)
    if letter == "a":
        return lambda moment: "PM" if moment.hour >= 12 else "AM"
    if letter == "S":
        return lambda moment: _fraction(moment, count)
    if letter == "z":
        if count >= 4:
            raise ConfigError(
                f"path.format={pattern!r}: full time zone names ({'z' * count} at index {position}) are not "
                "supported; use z (short name), Z, ZZ or ZZZ (zone id)",
                key=PATH_FORMAT_KEY,
            )
        return _zone_name
    if letter == "Z":
        if count >= 3:
            return lambda moment: str(moment.tzinfo)
        separator = ":" if count == 2 else ""
        return lambda moment: _offset(moment, separator)
    raise ConfigError(
        f"path.format={pattern!r}: illegal pattern letter {letter!r} at index {position} (Joda-Time pattern; "
        "quote literal text, e.g. 'year'=YYYY)",
        key=PATH_FORMAT_KEY,
    )
