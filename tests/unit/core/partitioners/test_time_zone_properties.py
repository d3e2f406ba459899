"""Properties of the vectorised Joda time zone arithmetic and of time-based partitions, over random times and zones."""

from __future__ import annotations

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_s3.core.timezones import local_to_utc, moment, utc_offsets_ms
from tests.support.partitioners import batch, bytes_values, partitioner

HOUR = 3_600_000
DAY = 24 * HOUR
YEAR_2000, YEAR_2030 = 946_684_800_000, 1_893_456_000_000
MS = timedelta(milliseconds=1)
# West and east of Greenwich, half-hour and 45-minute offsets, 30-minute DST, midnight transitions, negative DST.
ZONES = [
    "America/Los_Angeles",
    "America/New_York",
    "America/Sao_Paulo",
    "America/St_Johns",
    "America/Santiago",
    "Europe/Paris",
    "Europe/Dublin",
    "Africa/Casablanca",
    "Australia/Lord_Howe",
    "Pacific/Chatham",
    "Asia/Kolkata",
    "UTC",
]


def offset_ms(zone: ZoneInfo, instant: int) -> int:
    return moment(zone, instant).utcoffset() // MS


def find_transitions(zone_id: str) -> tuple[int, ...]:
    """UTC instants (ms) where the zone's offset changes, 2000-2030: a daily scan, then bisection to the ms."""
    zone, found = ZoneInfo(zone_id), []
    low, low_offset = YEAR_2000, offset_ms(zone, YEAR_2000)
    while low < YEAR_2030:
        high = low + DAY
        high_offset = offset_ms(zone, high)
        if high_offset != low_offset:
            left, right = low, high
            while right - left > 1:
                middle = (left + right) // 2
                left, right = (middle, right) if offset_ms(zone, middle) == low_offset else (left, middle)
            found.append(right)
        low, low_offset = high, high_offset
    return tuple(found)


TRANSITIONS = {zone_id: find_transitions(zone_id) for zone_id in ZONES}


@st.composite
def zones_and_times(draw, zone_ids: list[str], delta_ms: int, local: bool):
    """A zone and a time, half of the time within ``delta_ms`` of one of the zone's transitions.

    ``local``: the time is a local time, near the local time at which the transition happens (where gaps and
    overlaps are); otherwise a UTC instant near the transition instant.
    """
    zone_id = draw(st.sampled_from(zone_ids))
    zone, zone_transitions = ZoneInfo(zone_id), TRANSITIONS[zone_id]
    if not zone_transitions or draw(st.booleans()):
        return zone, draw(st.integers(YEAR_2000, YEAR_2030))
    transition = draw(st.sampled_from(zone_transitions))
    local_shift = offset_ms(zone, transition - 1) if local else 0
    return zone, transition + local_shift + draw(st.integers(-delta_ms, delta_ms))


def joda_next_transition(zone: ZoneInfo, instant: int) -> int:
    """Joda's ``nextTransition``: the first later instant with another offset, or ``instant`` when there is none."""
    return next((t for t in TRANSITIONS[zone.key] if t > instant), instant)


def joda_convert_local_to_utc(zone: ZoneInfo, local: int) -> int:
    """Joda's ``DateTimeZone.convertLocalToUTC(local, strict=false)``, step by step, one value at a time."""
    offset_local = offset_ms(zone, local)
    offset = offset_ms(zone, local - offset_local)
    if offset_local != offset and offset_local < 0:
        next_local = joda_next_transition(zone, local - offset_local)
        if next_local == local - offset_local:
            next_local = None
        next_adjusted = joda_next_transition(zone, local - offset)
        if next_adjusted == local - offset:
            next_adjusted = None
        if next_local != next_adjusted:
            offset = offset_local
    return local - offset


@settings(deadline=None)
@given(st.lists(zones_and_times(ZONES, delta_ms=2_000, local=False), min_size=1, max_size=20))
def test_offsets_match_zoneinfo_to_the_millisecond(cases):
    for zone, instant in cases:
        instants = np.array([instant - 1, instant, instant + 1], np.int64)

        assert utc_offsets_ms(zone, instants).tolist() == [offset_ms(zone, int(i)) for i in instants]


@settings(deadline=None)
@given(zones_and_times(ZONES, delta_ms=3 * HOUR, local=True))
def test_local_to_utc_is_jodas_convert_local_to_utc(case):
    zone, local = case

    assert local_to_utc(zone, np.array([local], np.int64)).tolist() == [joda_convert_local_to_utc(zone, local)]


REGULAR_ZONES = ["UTC", "America/Los_Angeles", "America/New_York", "America/Sao_Paulo", "Europe/Paris", "Asia/Kolkata"]
REGULAR_DURATIONS = [60_000, 5 * 60_000, 15 * 60_000, 30 * 60_000, HOUR, 2 * HOUR, 3 * HOUR, 6 * HOUR, 12 * HOUR, DAY]


@settings(deadline=None)
@given(zones_and_times(REGULAR_ZONES, delta_ms=3 * HOUR, local=False), st.sampled_from(REGULAR_DURATIONS))
def test_partition_start_holds_the_record_time_and_is_stable(case, duration):
    """For zones whose transitions fall on whole hours and durations aligned to them, the partition start (printed in
    local time) is at most the record's local time and less than a duration before it; encoding the start again gives
    the same directory."""
    zone, instant = case
    part = partitioner(
        **{
            "partitioner.class": "time_based",
            "partition.duration.ms": str(duration),
            "path.format": "YYYY-MM-dd'T'HH:mm:ss.SSSZZ",
            "locale": "en-US",
            "timezone": zone.key,
            "timestamp.extractor": "Record",
        }
    )

    def encode(ms: int) -> str:
        return part.encode(batch(1, timestamps=[ms]), bytes_values(1), now_ms=0)[0].as_py()

    start = datetime.fromisoformat(encode(instant))
    local_time = moment(zone, instant).replace(tzinfo=None)

    assert start.replace(tzinfo=None) <= local_time < start.replace(tzinfo=None) + timedelta(milliseconds=duration)
    assert encode(round(start.timestamp() * 1000)) == encode(instant)
