"""Joda-Time ``DateTimeFormat`` patterns: the syntax of Confluent's ``path.format``.

Confluent formats time partitions with ``DateTimeFormat.forPattern(path.format)``, so directory names only match
Confluent's when the pattern is read exactly as Joda reads it: runs of one ASCII letter are fields whose count sets
the width (numbers) or the style (text), every other character is literal text, single quotes quote letters and
``''`` is a quote. Any unquoted letter Joda does not know is an error; that is how ``year='YYYY'`` is rejected
(the bare ``r`` of ``year``), so the same mistake fails here as it does in Kafka Connect.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Callable, Iterator

from ..errors import ConfigError

PATH_FORMAT_KEY = "path.format"
LOCALE_KEY = "locale"

Formatter = Callable[[datetime], str]
"""Renders one zone-aware datetime (the instant in the partitioner's time zone) as directory text."""


@dataclass(frozen=True)
class _Names:
    """The text a locale gives to calendar fields (Java's DateFormatSymbols)."""

    months: tuple[str, ...]
    months_short: tuple[str, ...]
    days: tuple[str, ...]  # Monday first, as ISO day numbers
    days_short: tuple[str, ...]
    halfdays: tuple[str, str]
    era: str  # years 1-9999 are all in the common era


_ENGLISH = _Names(
    months=(
        "January", "February", "March", "April", "May", "June",
        "July", "August", "September", "October", "November", "December",
    ),
    months_short=("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"),
    days=("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"),
    days_short=("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"),
    halfdays=("AM", "PM"),
    era="AD",
)



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
    ``DateTimeFormat.parseToken`` splits a pattern (an unclosed quote runs to the end, as in Joda)."""
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
        text, quoted = [], False
        while i < length:
            char = pattern[i]
            if char == "'":
                if i + 1 < length and pattern[i + 1] == "'":
                    text.append("'")
                    i += 1
                else:
                    quoted = not quoted
            elif not quoted and _is_letter(char):
                break
            else:
                text.append(char)
            i += 1
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


def _year(getter: Callable[[datetime], int], count: int) -> Formatter:
    """``yy`` prints the last two digits (Joda's two-digit year); other counts the whole year, zero-padded."""
    if count == 2:
        return lambda moment: _padded(abs(getter(moment)) % 100, 2)
    return _number(getter, count)


def _offset(moment: datetime, separator: str) -> str:
    """``+HHmm`` / ``+HH:mm``, seconds of historical offsets dropped (Joda prints two fields)."""
    total = int(moment.utcoffset().total_seconds())
    sign = "-" if total < 0 else "+"
    minutes = abs(total) // 60
    return f"{sign}{minutes // 60:02d}{separator}{minutes % 60:02d}"


def _fraction(moment: datetime, count: int) -> str:
    """The first ``count`` digits of the fraction of the second (truncated, zeros past the milliseconds)."""
    return str(moment.microsecond // 1000 * 10**count // 1000).zfill(count)


def _field(pattern: str, letter: str, count: int, position: int) -> Formatter:
    names = _ENGLISH
    if letter == "G":
        return _literal(names.era)
    if letter == "C":
        return _number(lambda moment: moment.year // 100, count)
    if letter in "yY":
        return _year(lambda moment: moment.year, count)
    if letter == "x":
        return _year(lambda moment: moment.isocalendar()[0], count)
    if letter == "w":
        return _number(lambda moment: moment.isocalendar()[1], count)
    if letter == "e":
        return _number(lambda moment: moment.isoweekday(), count)
    if letter == "E":
        days = names.days if count >= 4 else names.days_short
        return lambda moment: days[moment.weekday()]
    if letter == "D":
        return _number(lambda moment: moment.timetuple().tm_yday, count)
    if letter == "M":
        if count >= 3:
            months = names.months if count >= 4 else names.months_short
            return lambda moment: months[moment.month - 1]
        return _number(lambda moment: moment.month, count)
    if letter == "d":
        return _number(lambda moment: moment.day, count)
    if letter == "a":
        return lambda moment: names.halfdays[moment.hour >= 12]
    if letter == "K":
        return _number(lambda moment: moment.hour % 12, count)
    if letter == "h":
        return _number(lambda moment: moment.hour % 12 or 12, count)
    if letter == "H":
        return _number(lambda moment: moment.hour, count)
    if letter == "k":
        return _number(lambda moment: moment.hour or 24, count)
    if letter == "m":
        return _number(lambda moment: moment.minute, count)
    if letter == "s":
        return _number(lambda moment: moment.second, count)
    if letter == "S":
        return lambda moment: _fraction(moment, count)
    if letter == "z":
        if count >= 4:
            raise ConfigError(
                f"path.format={pattern!r}: full time zone names ({'z' * count} at index {position}) are not "
                "supported; use z (short name), Z, ZZ or ZZZ (zone id)",
                key=PATH_FORMAT_KEY,
            )
        return lambda moment: moment.tzname()
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
