"""Properties of the vectorised Joda time zone arithmetic and of time-based partitions, over random times and zones."""

from __future__ import annotations

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from partitioner_helpers import batch, bytes_values, partitioner

from kafka_s3.partitioners.zones import local_to_utc, moment, utc_offsets_ms

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
def instants_near_transitions(draw, delta_ms: int):
    """A zone and a UTC instant, often within ``delta_ms`` of one of the zone's transitions."""
    zone_id = draw(st.sampled_from(ZONES))
    anywhere = st.integers(YEAR_2000, YEAR_2030)
    near = st.builds(lambda t, d: t + d, st.sampled_from(TRANSITIONS[zone_id] or (YEAR_2000,)),
                     st.integers(-delta_ms, delta_ms))
    return ZoneInfo(zone_id), draw(st.one_of(anywhere, near))


def joda_next_transition(zone: ZoneInfo, instant: int, horizon: int) -> int:
    """Joda's ``nextTransition``: the first later instant with another offset, or ``instant`` when there is none."""
    current = offset_ms(zone, instant)
    for later in (t for t in TRANSITIONS[zone.key] if instant < t <= horizon):
        if offset_ms(zone, later) != current or offset_ms(zone, later - 1) == current:
            return later
    return instant


def joda_convert_local_to_utc(zone: ZoneInfo, local: int) -> int:
    """Joda's ``DateTimeZone.convertLocalToUTC(local, strict=false)``, step by step, one value at a time."""
    offset_local = offset_ms(zone, local)
    offset = offset_ms(zone, local - offset_local)
    if offset_local != offset and offset_local < 0:
        horizon = local + 60 * DAY
        next_local = joda_next_transition(zone, local - offset_local, horizon)
        if next_local == local - offset_local:
            next_local = None
        next_adjusted = joda_next_transition(zone, local - offset, horizon)
        if next_adjusted == local - offset:
            next_adjusted = None
        if next_local != next_adjusted:
            offset = offset_local
    return local - offset


@settings(deadline=None)
@given(st.lists(instants_near_transitions(delta_ms=2_000), min_size=1, max_size=20))
def test_offsets_match_zoneinfo_to_the_millisecond(cases):
    for zone, instant in cases:
        instants = np.array([instant - 1, instant, instant + 1], np.int64)

        assert utc_offsets_ms(zone, instants).tolist() == [offset_ms(zone, int(i)) for i in instants]


@settings(deadline=None)
@given(instants_near_transitions(delta_ms=3 * HOUR))
def test_local_to_utc_is_jodas_convert_local_to_utc(case):
    zone, local = case

    assert local_to_utc(zone, np.array([local], np.int64)).tolist() == [joda_convert_local_to_utc(zone, local)]


REGULAR_ZONES = ["UTC", "America/Los_Angeles", "America/New_York", "America/Sao_Paulo", "Europe/Paris", "Asia/Kolkata"]
REGULAR_DURATIONS = [60_000, 5 * 60_000, 15 * 60_000, 30 * 60_000, HOUR, 2 * HOUR, 3 * HOUR, 6 * HOUR, 12 * HOUR, DAY]


@settings(deadline=None)
@given(
    st.sampled_from(REGULAR_ZONES),
    st.sampled_from(REGULAR_DURATIONS),
    st.one_of(
        st.integers(2 * DAY, 4_102_444_800_000),
        st.builds(lambda t, d: t + d, st.sampled_from(TRANSITIONS["America/Los_Angeles"]), st.integers(-DAY, DAY)),
    ),
)
def test_partition_start_holds_the_record_time_and_is_stable(zone_id, duration, instant):
    """For zones whose transitions fall on whole hours and durations aligned to them, the partition start (printed in
    local time) is at most the record's local time and less than a duration before it; encoding the start again gives
    the same directory."""
    part = partitioner(
        **{
            "partitioner.class": "time_based",
            "partition.duration.ms": str(duration),
            "path.format": "YYYY-MM-dd'T'HH:mm:ss.SSSZZ",
            "locale": "en-US",
            "timezone": zone_id,
            "timestamp.extractor": "Record",
        }
    )

    def encode(ms: int) -> str:
        return part.encode(batch(1, timestamps=[ms]), bytes_values(1), now_ms=0)[0].as_py()

    start = datetime.fromisoformat(encode(instant))
    local_time = moment(ZoneInfo(zone_id), instant).replace(tzinfo=None)

    assert start.replace(tzinfo=None) <= local_time < start.replace(tzinfo=None) + timedelta(milliseconds=duration)
    assert encode(round(start.timestamp() * 1000)) == encode(instant)
