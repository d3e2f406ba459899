"""Java's ``DateTimeFormatter.ofPattern`` patterns, printed as a JVM prints them (Lenses' ``_date.<pattern>``).

Lenses' S3 sink names a ``PARTITIONBY _date.<pattern>`` directory with ``DateTimeFormatter.ofPattern(pattern)
.withZone(<JVM zone>).format(<record timestamp>)`` (LS ``sink/config/PartitionField.DatePartitionField``). The pattern
grammar is ``java.time.format.DateTimeFormatterBuilder.appendPattern``'s (``parsePattern``):

- ASCII letters are fields, a run of one letter one field (its count decides the form); ``'text'`` is a literal,
  ``''`` a single quote (inside or outside a literal); ``[``/``]`` open and close an optional section, always printed
  here (every field of a date-time is present); ``{``, ``}`` and ``#`` are reserved; any other character is itself.
- Supported fields, printed exactly (ISO chronology, years 1-9999): ``u``/``y`` (year, year-of-era: 2 letters the last
  two digits, else padded to the count), ``M``/``L`` (month: 1-2 letters a number, 3 ``Jan``, 4 ``January``, 5
  ``J``), ``d``, ``D`` (day of year), ``H``, ``h``, ``k``, ``K``, ``m``, ``s`` (1 letter unpadded, 2 padded),
  ``S``… (fraction of the second, truncated to the count), ``E`` (1-3 ``Mon``, 4 ``Monday``, 5 ``M``), ``a``
  (``AM``/``PM``), ``G`` (1-3 ``AD``, 4 ``Anno Domini``, 5 ``A``), ``Q``/``q`` (quarter: 1-2 a number, 3 ``Q1``). Text
  is English, what a JVM with an English default locale prints (Lenses uses the JVM's default locale).
- Refused, naming the letter: the week-based fields (``Y``, ``w``, ``W``, ``e``, ``c``, ``F``: they follow the JVM
  locale's week rules), zone and offset fields (``V``, ``v``, ``z``, ``O``, ``X``, ``x``, ``Z``: the JVM's zone),
  ``n``, ``N``, ``A`` (fixed widths that fail at run time), ``B``, ``g``, the pad modifier ``p``, and letters Java does
  not know.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from kafka_s3.core.errors import ConfigError

Printer = Callable[[datetime], str]

MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
#: letters whose printing depends on what kafka-s3 cannot know of Lenses' JVM (its locale's weeks, its zone), or that
#: fail at run time: refused by name
UNSUPPORTED = {
    "Y": "week-based year (the JVM locale's week rules)",
    "w": "week of week-based year (the JVM locale's week rules)",
    "W": "week of month (the JVM locale's week rules)",
    "e": "localized day of week (the JVM locale's week rules)",
    "c": "localized day of week (the JVM locale's week rules)",
    "F": "aligned week/day of month (its meaning changed between JDK versions)",
    "V": "zone id (the JVM's zone)",
    "v": "generic zone name (the JVM's zone)",
    "z": "zone name (the JVM's zone)",
    "O": "localized zone offset (the JVM's zone)",
    "X": "zone offset (the JVM's zone)",
    "x": "zone offset (the JVM's zone)",
    "Z": "zone offset (the JVM's zone)",
    "n": "nano of second (a fixed width that fails at run time)",
    "N": "nano of day (a fixed width that fails at run time)",
    "A": "milli of day (a fixed width that fails at run time)",
    "B": "day period (JDK 16 and later, locale text)",
    "g": "modified Julian day",
    "p": "pad modifier",
}


#: the setting a bad pattern is reported against: Lenses' ``_date.<pattern>`` comes from its KCQL
KEY = "connect.s3.kcql"


def _fail(owner: str, pattern: str, problem: str) -> ConfigError:
    return ConfigError(f"{owner}{pattern}: {problem}", key=KEY)


def _number(get: Callable[[datetime], int], count: int, widths: dict[int, int]) -> Printer:
    width = widths[count]
    return lambda moment: str(get(moment)).rjust(width, "0")


def _year(get: Callable[[datetime], int], count: int) -> Printer:
    if count == 2:  # appendValueReduced(field, 2, 2, 2000-01-01): the last two digits
        return lambda moment: f"{get(moment) % 100:02d}"
    return lambda moment: str(get(moment)).rjust(count, "0")  # count < 4: NORMAL, else EXCEEDS_PAD (years ≤ 9999)


def _text(names: tuple[str, ...], index: Callable[[datetime], int], count: int) -> Printer:
    if count == 4:
        return lambda moment: names[index(moment)]
    if count == 5:
        return lambda moment: names[index(moment)][0]
    return lambda moment: names[index(moment)][:3]


def _field(letter: str, count: int, owner: str, pattern: str) -> Printer:
    def too_many() -> ConfigError:
        return _fail(owner, pattern, f"too many pattern letters: {letter * count} (Java refuses it too)")

    if letter in UNSUPPORTED:
        raise _fail(
            owner,
            pattern,
            f"pattern letter {letter!r} ({UNSUPPORTED[letter]}) cannot be written as Lenses' JVM would print it",
        )
    if letter in "uy":
        return _year(lambda m: m.year, count)
    if letter in "ML":
        if count > 5:
            raise too_many()
        if count <= 2:
            return _number(lambda m: m.month, count, {1: 1, 2: 2})
        return _text(MONTHS, lambda m: m.month - 1, count)
    if letter in "dHhKkms":
        if count > 2:
            raise too_many()
        get: dict[str, Callable[[datetime], int]] = {
            "d": lambda m: m.day,
            "H": lambda m: m.hour,
            "h": lambda m: (m.hour % 12) or 12,
            "K": lambda m: m.hour % 12,
            "k": lambda m: m.hour or 24,
            "m": lambda m: m.minute,
            "s": lambda m: m.second,
        }
        return _number(get[letter], count, {1: 1, 2: 2})
    if letter == "D":
        if count > 3:
            raise too_many()
        return _number(lambda m: m.timetuple().tm_yday, count, {1: 1, 2: 2, 3: 3})
    if letter == "S":
        if count > 9:
            raise too_many()
        return lambda moment: f"{moment.microsecond * 1000:09d}"[:count]  # appendFraction: truncated, not rounded
    if letter == "E":
        if count > 5:
            raise too_many()
        return _text(DAYS, lambda m: m.weekday(), count)
    if letter == "a":
        if count > 1:
            raise too_many()
        return lambda moment: "AM" if moment.hour < 12 else "PM"
    if letter == "G":
        if count > 5:
            raise too_many()
        return lambda moment: {4: "Anno Domini", 5: "A"}.get(count, "AD")
    if letter in "Qq":
        if count > 3:
            raise _fail(owner, pattern, f"pattern letters {letter * count}: quarter names are not written (use 1-3)")
        if count == 3:
            return lambda moment: f"Q{(moment.month - 1) // 3 + 1}"
        return _number(lambda m: (m.month - 1) // 3 + 1, count, {1: 1, 2: 2})
    raise _fail(owner, pattern, f"unknown pattern letter {letter!r} (Java's DateTimeFormatter refuses it too)")


def compile_java_pattern(pattern: str, owner: str) -> Printer:
    """A printer of ``pattern`` for a time-zone-aware datetime (already in the zone to print), as
    ``DateTimeFormatter.ofPattern(pattern, Locale.ENGLISH)`` prints it; for what cannot be printed exactly a
    :class:`ConfigError` on ``connect.s3.kcql`` whose message starts with ``owner`` (e.g. ``connect.s3.kcql:
    PARTITIONBY _date.``), then the pattern and the letter."""
    parts: list[Printer | str] = []
    depth = 0
    at = 0
    while at < len(pattern):
        char = pattern[at]
        if ("A" <= char <= "Z") or ("a" <= char <= "z"):
            end = at
            while end < len(pattern) and pattern[end] == char:
                end += 1
            parts.append(_field(char, end - at, owner, pattern))
            at = end
        elif char == "'":
            end = at + 1
            text = ""
            while True:
                if end >= len(pattern):
                    raise _fail(owner, pattern, "the pattern ends inside a quoted literal (Java refuses it too)")
                if pattern[end] == "'":
                    if end + 1 < len(pattern) and pattern[end + 1] == "'":
                        text += "'"
                        end += 2
                        continue
                    break
                text += pattern[end]
                end += 1
            parts.append(text if end > at + 1 else "'")  # '' alone is one quote
            at = end + 1
        elif char == "[":
            depth += 1
            at += 1
        elif char == "]":
            if not depth:
                raise _fail(owner, pattern, "']' without a '[' before it (Java refuses it too)")
            depth -= 1
            at += 1
        elif char in "{}#":
            raise _fail(owner, pattern, f"{char!r} is reserved in Java's date patterns")
        else:
            parts.append(char)
            at += 1

    def render(moment: datetime) -> str:
        return "".join(p if isinstance(p, str) else p(moment) for p in parts)

    return render
