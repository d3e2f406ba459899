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
from datetime import UTC, datetime, timedelta, tzinfo
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
        ZoneInfo(JAVA_SHORT_ZONES.get(value, value))
    except (ZoneInfoNotFoundError, ValueError):
        return "not a known time zone id (use e.g. UTC, America/Los_Angeles, Europe/Paris)"
    return None


# Java's ZoneId.SHORT_IDS, which Joda/Java accept and users copy from Confluent's docs.
JAVA_SHORT_ZONES = {
    "EST": "-05:00",
    "MST": "-07:00",
    "HST": "-10:00",
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


def zone_info(value: str) -> ZoneInfo:
    """A ``ZoneInfo`` for a Java/Joda time zone id (including Java's short ids such as ``PST``)."""
    value = JAVA_SHORT_ZONES.get(value, value)
    if re.fullmatch(r"[+-]\d{2}:\d{2}", value):
        # Fixed offsets: map to Etc/GMT zones where possible (sign is inverted in the tz database).
        hours, minutes = int(value[1:3]), int(value[4:6])
        if minutes == 0:
            sign = "-" if value[0] == "+" else "+"
            return ZoneInfo("UTC" if hours == 0 else f"Etc/GMT{sign}{hours}")
    return ZoneInfo(value)
