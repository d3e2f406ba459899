"""Issue 15 item 2: every ``timezone`` Joda's ``DateTimeZone.forID`` accepts, with the paths Confluent produces.

Expected paths come from the peers' code, not from our partitioner:

- Confluent's ``TimeBasedPartitioner.configure`` (kafka-connect-storage-common, ``partitioner/TimeBasedPartitioner``)
  parses ``timezone`` with Joda ``DateTimeZone.forID``; ``encodePartition`` floors ``convertUTCToLocal(ts)`` to the
  duration and formats with ``DateTimeFormat.forPattern(path.format).withZone(tz)``.
- Joda ``DateTimeZone.forID`` (joda-time 2.13.1, ``org/joda/time/DateTimeZone.java``): ``"UTC"``, then the
  ZoneInfoProvider (tzdb ids and links), then ``[+-]`` offsets through ``parseOffset``; anything else throws
  IllegalArgumentException, so Java-only short ids such as ``PST`` are rejected.
- Joda's tzdb (``tz/src/northamerica``, tzdata 2025a): ``EST``, ``MST``, ``HST`` are links to America/Panama,
  America/Phoenix and Pacific/Honolulu; America/Panama is ``-5:19:36 CMT`` until 1908-04-22, then ``-5:00 EST``.
- The facts sheet's example (PEER-FORMATS.md A4): 2020-01-01T03:30:00Z, hourly, EST → ``year=2019/month=12/day=31/
  hour=22``; ``+05:30`` → ``…/day=01/hour=09``.
"""

from __future__ import annotations

import numpy as np
import pytest

from kafka_s3.core.errors import ConfigError
from kafka_s3.core.timezones import utc_offsets_ms, zone_info
from tests.support.partitioners import batch, bytes_values, epoch_ms, partitioner, sink_config

HOURLY = "'year'=YYYY/'month'=MM/'day'=dd/'hour'=HH"


def hourly_path(zone: str, instant: str) -> str:
    part = partitioner(
        **{
            "partitioner.class": "io.confluent.connect.storage.partitioner.TimeBasedPartitioner",
            "partition.duration.ms": "3600000",
            "path.format": HOURLY,
            "locale": "en-US",
            "timezone": zone,
            "timestamp.extractor": "Record",
        }
    )
    return part.encode(batch(1, timestamps=[epoch_ms(instant)]), bytes_values(1), now_ms=0).to_pylist()[0]


@pytest.mark.parametrize(
    "zone, instant, expected",
    [
        # facts sheet A4 examples
        ("EST", "2020-01-01T03:30:00+00:00", "year=2019/month=12/day=31/hour=22"),
        ("+05:30", "2020-01-01T03:30:00+00:00", "year=2020/month=01/day=01/hour=09"),
        # Joda's EST is America/Panama, never DST: July is still -05:00 (America/New_York would give hour=08)
        ("EST", "2020-07-01T12:00:00+00:00", "year=2020/month=07/day=01/hour=07"),
        # MST = America/Phoenix (-07:00, no DST since 1968), HST = Pacific/Honolulu (-10:00)
        ("MST", "2020-07-01T12:00:00+00:00", "year=2020/month=07/day=01/hour=05"),
        ("HST", "2020-07-01T12:00:00+00:00", "year=2020/month=07/day=01/hour=02"),
        # fixed offsets in each form Joda's parseOffset reads
        ("-05:00", "2020-07-01T12:00:00+00:00", "year=2020/month=07/day=01/hour=07"),
        ("+0530", "2020-01-01T03:30:00+00:00", "year=2020/month=01/day=01/hour=09"),
        ("-03", "2020-01-01T01:00:00+00:00", "year=2019/month=12/day=31/hour=22"),
        ("+00:00", "2020-01-01T03:30:00+00:00", "year=2020/month=01/day=01/hour=03"),
        # UTC and tzdb ids and links
        ("UTC", "2020-01-01T03:30:00+00:00", "year=2020/month=01/day=01/hour=03"),
        ("Etc/GMT+5", "2020-01-01T03:30:00+00:00", "year=2019/month=12/day=31/hour=22"),
        ("US/Eastern", "2020-07-01T12:00:00+00:00", "year=2020/month=07/day=01/hour=08"),
        ("Asia/Kolkata", "2020-01-01T03:30:00+00:00", "year=2020/month=01/day=01/hour=09"),
    ],
)
def test_joda_zone_ids_give_confluents_paths(zone, instant, expected):
    assert hourly_path(zone, instant) == expected


def test_est_is_the_tzdb_link_not_a_fixed_offset():
    """Before 1908 America/Panama kept CMT (-5:19:36): Joda's EST link has it, a fixed -05:00 would not."""
    instant = epoch_ms("1900-01-01T05:00:00+00:00")
    assert utc_offsets_ms(zone_info("EST"), np.array([instant])).tolist() == [-(5 * 3600 + 19 * 60 + 36) * 1000]


@pytest.mark.parametrize("zone", ["EST", "MST", "HST", "+05:30", "-05:00", "+0530", "UTC", "Etc/GMT-14"])
def test_config_accepts_every_id_joda_accepts(zone):
    assert sink_config(timezone=zone)["timezone"] == zone


@pytest.mark.parametrize(
    "zone, hint",
    [
        ("PST", "America/Los_Angeles"),  # Java ZoneId.SHORT_IDS only: Joda's forID throws
        ("ECT", "Europe/Paris"),
        ("+24:00", "+05:30"),  # Joda's offset parser: hours 0-23
        ("+05:60", "+05:30"),
        ("Mars/Olympus", "America/Los_Angeles"),
        ("posix/Europe/Paris", "Europe/Paris"),
    ],
)
def test_ids_joda_rejects_are_rejected_naming_the_key(zone, hint):
    with pytest.raises(ConfigError) as info:
        sink_config(timezone=zone)
    assert "timezone" in str(info.value) and hint in str(info.value)
