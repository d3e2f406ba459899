"""Confluent's TimeBasedPartitioner, DailyPartitioner and HourlyPartitioner.

A record goes to the directory of the time partition holding its time (from ``timestamp.extractor``): the time is
floored to ``partition.duration.ms`` in the local time of ``timezone``, and the partition's start is formatted with
``path.format`` (a Joda pattern) in that zone. Flooring, DST handling and formatting follow Joda exactly, because the
directory names must be the ones Confluent writes.

Vectorised: offsets and floors are numpy operations over the batch; only distinct partitions are formatted in Python.
"""

from __future__ import annotations

from datetime import tzinfo

import numpy as np
import pyarrow as pa

from kafka_s3.core.config.model import Config
from kafka_s3.core.converters.base import Logical
from kafka_s3.core.errors import ConfigError
from kafka_s3.core.partitioners import EXTRACTORS
from kafka_s3.core.partitioners.base import Partitioner
from kafka_s3.core.partitioners.joda import LOCALE_KEY, PATH_FORMAT_KEY, compile_pattern
from kafka_s3.core.partitioners.timestamps import TimestampExtractor
from kafka_s3.core.partitioners.values import record_error
from kafka_s3.core.timezones import (
    HOUR_MS,
    MAX_INSTANT_MS,
    MIN_INSTANT_MS,
    local_to_utc,
    moment,
    utc_offsets_ms,
    zone_info,
)

DURATION_KEY = "partition.duration.ms"
TIMEZONE_KEY = "timezone"
EXTRACTOR_KEY = "timestamp.extractor"
DAY_MS = 24 * HOUR_MS


class TimeBasedPartitioner(Partitioner):
    """Directories from ``path.format``, one per ``partition.duration.ms`` of local time in ``timezone``."""

    name = "time_based"

    def __init__(self, config: Config):
        super().__init__(config)
        self.duration_ms, self.path_format = self._layout(config)
        self.zone = _zone(config.get(TIMEZONE_KEY) or "")
        locale = config.get(LOCALE_KEY) or ""
        if not locale.strip():
            raise ConfigError(f"{self.name} partitioning needs {LOCALE_KEY} (e.g. en-US)", key=LOCALE_KEY)
        self.formatter = compile_pattern(self.path_format, locale)
        self.extractor: TimestampExtractor = EXTRACTORS.resolve(config.get(EXTRACTOR_KEY) or "Wallclock")(config)
        self.deterministic = self.extractor.deterministic
        self.uses_values = self.extractor.uses_values

    def _layout(self, config: Config) -> tuple[int, str]:
        """``(partition duration, path format)`` from the config; a trailing directory delimiter is dropped."""
        duration = config.get(DURATION_KEY)
        if duration is None or duration <= 0:
            raise ConfigError(f"{DURATION_KEY} must be a positive number of milliseconds", key=DURATION_KEY)
        path_format = config.get(PATH_FORMAT_KEY) or ""
        delim = self.directory_delim
        if not path_format.strip() or path_format == delim:
            raise ConfigError(f"{PATH_FORMAT_KEY} cannot be empty", key=PATH_FORMAT_KEY)
        if delim and path_format.endswith(delim):
            path_format = path_format[: -len(delim)]
        return duration, path_format

    def timestamps(self, records: pa.RecordBatch, values: Logical, now_ms: int) -> np.ndarray:
        return self.extractor.extract(records, values, now_ms)

    def encode(self, records: pa.RecordBatch, values: Logical, now_ms: int) -> pa.Array:
        instants = self.timestamps(records, values, now_ms)
        outside = (instants < MIN_INSTANT_MS) | (instants > MAX_INSTANT_MS)
        if outside.any():
            row = int(np.argmax(outside))
            raise record_error(records, row, f"time {instants[row]} ms is not within the years 1-9999")
        local = instants + utc_offsets_ms(self.zone, instants)
        # Joda floors with Java's integer division, which truncates toward zero (before 1970 it rounds up): kept, so
        # that such records get Confluent's directories too.
        floors = pa.array(local - np.fmod(local, self.duration_ms)).dictionary_encode()
        starts = local_to_utc(self.zone, floors.dictionary.to_numpy())
        directories = [self.formatter(moment(self.zone, start)) for start in starts.tolist()]
        return pa.array(directories, pa.string()).take(floors.indices)

    def partition_fields(self) -> list[str]:
        """The names before ``=`` in each directory of ``path.format``, quotes removed (Confluent's Hive fields)."""
        return [part.split("=")[0].replace("'", "") for part in self.path_format.split(self.directory_delim)]


class DailyPartitioner(TimeBasedPartitioner):
    """``'year'=YYYY/'month'=MM/'day'=dd``, one day long; ``path.format`` and ``partition.duration.ms`` are ignored."""

    name = "daily"

    def _layout(self, config: Config) -> tuple[int, str]:
        delim = self.directory_delim
        return DAY_MS, f"'year'=YYYY{delim}'month'=MM{delim}'day'=dd"


class HourlyPartitioner(TimeBasedPartitioner):
    """``'year'=YYYY/'month'=MM/'day'=dd/'hour'=HH``, one hour long; ``path.format`` and the duration are ignored."""

    name = "hourly"

    def _layout(self, config: Config) -> tuple[int, str]:
        delim = self.directory_delim
        return HOUR_MS, f"'year'=YYYY{delim}'month'=MM{delim}'day'=dd{delim}'hour'=HH"


def _zone(zone_id: str) -> tzinfo:
    """The ``timezone`` as a tzinfo, as Joda's ``DateTimeZone.forID`` reads it."""
    if not zone_id.strip():
        raise ConfigError(f"time-based partitioning needs {TIMEZONE_KEY} (e.g. UTC)", key=TIMEZONE_KEY)
    try:
        return zone_info(zone_id.strip())
    except ValueError as exc:
        raise ConfigError(f"{TIMEZONE_KEY}={zone_id!r}: {exc}", key=TIMEZONE_KEY) from None
