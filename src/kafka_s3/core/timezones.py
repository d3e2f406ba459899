"""Time zones as Confluent's partitioners see them: Joda/Java zone ids, and UTC <-> local conversions.

Ids are parsed here once for the three users of ``timezone``: config validation, the time-based partitioners and
the scheduled rotation (``rotate.schedule.interval.ms``). It sits below all three, so none of them depends on
another to read a zone.

Confluent floors record times in the local time of ``timezone`` with Joda's ``convertUTCToLocal`` and
``convertLocalToUTC(local, strict=false)``; which side of a DST gap or overlap a partition starts on depends on
those exact rules, so they are reproduced here on int64 millisecond arrays. Offsets come from the same ``zoneinfo``
data that validates ``timezone`` (no second time zone database).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from functools import lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import numpy as np
import pyarrow as pa

HOUR_MS = 3_600_000
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MS = timedelta(milliseconds=1)

# Instants whose local time stays within Python's datetime range (years 1-9999) whatever the offset.
MIN_INSTANT_MS = (datetime(1, 1, 3, tzinfo=UTC) - _EPOCH) // _MS
MAX_INSTANT_MS = (datetime(9999, 12, 29, tzinfo=UTC) - _EPOCH) // _MS


def moment(zone: tzinfo, instant_ms: int) -> datetime:
    """The instant as a datetime in ``zone`` (what a Joda ``DateTime`` in that zone prints)."""
    return (_EPOCH + timedelta(milliseconds=instant_ms)).astimezone(zone)


def utc_offsets_ms(zone: tzinfo, instants_ms: np.ndarray) -> np.ndarray:
    """The UTC offset (ms) in effect at each UTC instant: Joda's ``getOffset``.

    Offsets are looked up once per distinct UTC hour (cached across calls); an hour holding a transition is bisected
    to the millisecond, so half-hour shifts and historical offsets with seconds stay exact.
    """
    hours = pa.array(instants_ms // HOUR_MS).dictionary_encode()
    per_hour = np.array([_hour_offsets(zone, hour) for hour in hours.dictionary.to_pylist()], np.int64)
    before, after, switch = per_hour.reshape(-1, 3)[hours.indices.to_numpy()].T
    offsets: np.ndarray = np.where(instants_ms < switch, before, after)
    return offsets


def local_to_utc(zone: tzinfo, locals_ms: np.ndarray) -> np.ndarray:
    """Joda's ``convertLocalToUTC(local, strict=false)`` for each local time (ms since the local epoch).

    In an overlap Joda keeps the offset found at the first guess (the earlier instant west of Greenwich, the later one
    east of it); in a gap west of Greenwich it uses the offset before the transition, which lands after the gap.
    """
    offset_at_local = utc_offsets_ms(zone, locals_ms)
    offset = utc_offsets_ms(zone, locals_ms - offset_at_local)
    # Joda's gap test compares the next transitions after the two candidate instants; they differ exactly when a
    # transition lies between them, i.e. when the offsets at the two candidates differ.
    in_western_gap = (
        (offset_at_local != offset) & (offset_at_local < 0) & (utc_offsets_ms(zone, locals_ms - offset) != offset)
    )
    return locals_ms - np.where(in_western_gap, offset_at_local, offset)


def _offset_ms(zone: tzinfo, instant_ms: int) -> int:
    offset = moment(zone, instant_ms).utcoffset()
    assert offset is not None  # an aware datetime (astimezone) has an offset
    return offset // _MS


@lru_cache(maxsize=65536)
def _hour_offsets(zone: tzinfo, hour: int) -> tuple[int, int, int]:
    """``(offset before, offset after, first instant of the later offset)`` within one UTC hour."""
    start, end = hour * HOUR_MS, (hour + 1) * HOUR_MS - 1
    first, last = _offset_ms(zone, start), _offset_ms(zone, end)
    if first == last:
        return first, last, end + 1
    low, high = start, end  # offset(low) == first, offset(high) == last
    while high - low > 1:
        middle = (low + high) // 2
        if _offset_ms(zone, middle) == first:
            low = middle
        else:
            high = middle
    return first, last, high


def timezone_error(value: str) -> str | None:
    if value == "":
        return None
    try:
        zone_info(value)
    except ValueError as exc:
        return str(exc)
    return None


# tzdb 2024b turned these System V names into links (tzdb ``backward``); Joda 2.13.1, which Confluent's storage
# connectors ship (tzdata 2025a), has them as links, so ``EST`` is America/Panama (-05:00 since 1908, never DST), not
# a fixed offset nor America/New_York. Mapped here so an older system zoneinfo gives Joda's zones.
TZDB_2024B_LINKS = {
    "EST": "America/Panama",
    "MST": "America/Phoenix",
    "HST": "Pacific/Honolulu",
    "EST5EDT": "America/New_York",
    "CST6CDT": "America/Chicago",
    "MST7MDT": "America/Denver",
    "PST8PDT": "America/Los_Angeles",
    "CET": "Europe/Brussels",
    "MET": "Europe/Brussels",
    "EET": "Europe/Athens",
    "WET": "Europe/Lisbon",
}

# Java's ZoneId.SHORT_IDS that are not tzdb ids: Joda's DateTimeZone.forID rejects them (Confluent's timezone
# validator with it), so they are refused here too, naming the region id to use.
JAVA_ONLY_SHORT_IDS = {
    "ACT": "Australia/Darwin",
    "AET": "Australia/Sydney",
    "AGT": "America/Argentina/Buenos_Aires",
    "ART": "Africa/Cairo",
    "AST": "America/Anchorage",
    "BET": "America/Sao_Paulo",
    "BST": "Asia/Dhaka",
    "CAT": "Africa/Harare",
    "CNT": "America/St_Johns",
    "CST": "America/Chicago",
    "CTT": "Asia/Shanghai",
    "EAT": "Africa/Addis_Ababa",
    "ECT": "Europe/Paris",
    "IET": "America/Indiana/Indianapolis",
    "IST": "Asia/Kolkata",
    "JST": "Asia/Tokyo",
    "MIT": "Pacific/Apia",
    "NET": "Asia/Yerevan",
    "NST": "Pacific/Auckland",
    "PLT": "Asia/Karachi",
    "PNT": "America/Phoenix",
    "PRT": "America/Puerto_Rico",
    "PST": "America/Los_Angeles",
    "SST": "Pacific/Guadalcanal",
    "VST": "Asia/Ho_Chi_Minh",
}

# Joda's offset parser (DateTimeZone.parseOffset: appendTimeZoneOffset(null, true, 2, 4)): a sign, two-digit hours,
# then optional minutes, seconds and milliseconds, with or without ':' separators.
_OFFSET = re.compile(
    r"(?P<sign>[+-])(?P<h>\d\d)(?:(?P<c>:?)(?P<m>\d\d)(?:(?P=c)(?P<s>\d\d)(?:[.,](?P<ms>\d{1,3}))?)?)?"
)
# Files under a zoneinfo directory that are not zone ids Joda knows.
_NOT_JODA = ("posix/", "right/", "Factory", "posixrules", "localtime", "leapseconds", "tzdata.zi")


def fixed_offset(value: str) -> tzinfo | None:
    """A ``[+-]hh[:mm[:ss[.SSS]]]`` id as Joda's fixed zone (UTC for a zero offset), or ``None`` if not one."""
    match = _OFFSET.fullmatch(value)
    if match is None:
        return None
    hours, minutes = int(match["h"]), int(match["m"] or 0)
    seconds, millis = int(match["s"] or 0), int((match["ms"] or "0").ljust(3, "0"))
    if hours > 23 or minutes > 59 or seconds > 59:
        return None
    offset = timedelta(hours=hours, minutes=minutes, seconds=seconds, milliseconds=millis)
    if not offset:
        return UTC
    return timezone(-offset if match["sign"] == "-" else offset)


@lru_cache(maxsize=256)
def zone_info(value: str) -> tzinfo:
    """The zone Joda's ``DateTimeZone.forID(value)`` gives (Confluent's ``timezone``), as a tzinfo.

    ``UTC``; any tzdb id or link (``EST``, ``MST``, ``HST`` as tzdb 2024b+ links); ``[+-]hh:mm`` fixed offsets.
    Raises ``ValueError`` (with what to use instead) for ids Joda rejects, Java-only short ids such as ``PST``
    included.
    """
    if value == "UTC":
        return UTC
    if value in JAVA_ONLY_SHORT_IDS:
        raise ValueError(
            f"{value} is a Java short id that Joda (and so Confluent's partitioners) rejects: use "
            f"{JAVA_ONLY_SHORT_IDS[value]}"
        )
    if value[:1] in ("+", "-"):
        fixed = fixed_offset(value)
        if fixed is None:
            raise ValueError("not a valid UTC offset (use [+-]hh:mm, e.g. +05:30)")
        return fixed
    if not value or value.startswith(_NOT_JODA) or ".." in value or value.startswith("/"):
        raise ValueError(_UNKNOWN)
    try:
        return ZoneInfo(TZDB_2024B_LINKS.get(value, value))
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise ValueError(_UNKNOWN) from None


_UNKNOWN = "not a known time zone id (use e.g. UTC, America/Los_Angeles, Europe/Paris, or an offset such as +05:30)"
