"""Every rotation rule against the real broker, SeaweedFS and Spark: flush.size, rotate.interval.ms (record time, and
a record of another encoded partition), rotate.schedule.interval.ms (wall clock, in a follow thread), rotate.size.bytes
and schema changes (schema.compatibility=NONE)."""

from __future__ import annotations

import datetime as dt
import io
import json
import threading
import time
from zoneinfo import ZoneInfo

import avro.datafile
import avro.io
import pytest

from kafka_s3.pipelines.backup.driver import Backup, group_id
from tests.support.backup import data_keys, get, group_offsets, json_objects, utc_ms, wait_until

pytestmark = pytest.mark.integration


def _props(**properties) -> dict:
    return {k.replace(".", "__"): v for k, v in properties.items()}


def _bin_records(body: bytes) -> list[bytes]:
    assert body.endswith(b"\n")
    return body.split(b"\n")[:-1]


class _StopAfter:
    """``on_cycle`` callback stopping a follow loop after ``n`` cycles."""

    def __init__(self, n: int):
        self.n, self.seen, self.stop = n, 0, threading.Event()

    def __call__(self, report, results):
        self.seen += 1
        if self.seen >= self.n:
            self.stop.set()


def test_flush_size_commits_full_chunks_and_follow_keeps_the_rest_open(
    engine, make_config, fresh_bucket, fresh_topic, produce, s3_client, kafka_bootstrap
):
    topic = fresh_topic(2)
    counts = {0: 10, 1: 5}
    produce(topic, [{"partition": p, "value": f"v{p}-{i}".encode()} for p, n in counts.items() for i in range(n)])
    _, config = make_config(
        fresh_bucket, topic, **_props(**{"format.class": "bytearray", "flush.size": "4", "cycle.interval.ms": "0"})
    )

    # follow: only full chunks commit; the group offset stays at the first offset of the open chunk.
    stopper = _StopAfter(1)
    Backup(config, engine=engine, on_cycle=stopper).follow(stopper.stop)
    d = f"topics/{topic}"
    full = [
        f"{d}/partition=0/{topic}+0+0000000000.bin",
        f"{d}/partition=0/{topic}+0+0000000004.bin",
        f"{d}/partition=1/{topic}+1+0000000000.bin",
    ]
    assert data_keys(s3_client, fresh_bucket, topic) == sorted(full)
    assert group_offsets(kafka_bootstrap, group_id(config), topic, 2) == {0: 8, 1: 4}

    # --once flushes what is still open, from where the group stands.
    summary = Backup(config, engine=engine).run_once()
    rest = [f"{d}/partition=0/{topic}+0+0000000008.bin", f"{d}/partition=1/{topic}+1+0000000004.bin"]
    assert data_keys(s3_client, fresh_bucket, topic) == sorted(full + rest)
    assert summary.records == 3 and summary.objects == 2
    expected = {full[0]: range(4), full[1]: range(4, 8), rest[0]: range(8, 10), full[2]: range(4), rest[1]: range(4, 5)}
    for key, offsets in expected.items():
        p = key.split("+")[-2]
        assert _bin_records(get(s3_client, fresh_bucket, key)) == [f"v{p}-{i}".encode() for i in offsets], key
    assert group_offsets(kafka_bootstrap, group_id(config), topic, 2) == {0: 10, 1: 5}


def test_rotate_interval_uses_record_time_and_rolls_on_another_encoded_partition(
    engine, make_config, fresh_bucket, fresh_topic, produce, s3_client
):
    topic = fresh_topic(1)
    h = utc_ms(2015, 4, 2, 10)
    offsets_times = [h, h + 10_000, h + 59_999, h + 60_000, h + 70_000, h + 3_600_000, h + 3_610_000, h + 30_000]
    produce(topic, [{"value": json.dumps({"n": n}).encode(), "timestamp": t} for n, t in enumerate(offsets_times)])
    _, config = make_config(
        fresh_bucket,
        topic,
        **_props(
            **{
                "partitioner.class": "TimeBasedPartitioner",
                "partition.duration.ms": "3600000",
                "path.format": "'year'=YYYY/'month'=MM/'day'=dd/'hour'=HH",
                "locale": "en-US",
                "timezone": "UTC",
                "timestamp.extractor": "Record",
                "rotate.interval.ms": "60000",
                "flush.size": "100",
                "value.converter": "json",
                "value.converter.schemas.enable": "false",
            }
        ),
    )

    Backup(config, engine=engine).run_once()

    d = f"topics/{topic}/year=2015/month=04/day=02"
    expected = {
        f"{d}/hour=10/{topic}+0+0000000000.json": [0, 1, 2],  # 59.999 s after the first record: still in
        f"{d}/hour=10/{topic}+0+0000000003.json": [3, 4],  # 60 s after offset 0: rolls; offset 4 is 10 s after 3
        f"{d}/hour=11/{topic}+0+0000000005.json": [5, 6],  # another encoded partition rolls
        f"{d}/hour=10/{topic}+0+0000000007.json": [7],  # a late record of the earlier hour rolls again
    }
    objects = json_objects(s3_client, fresh_bucket, topic)
    assert sorted(objects) == sorted(expected)
    for key, ns in expected.items():
        assert [v["n"] for v in objects[key]] == ns, key


def test_rotate_size_bytes_counts_keys_values_and_headers(
    engine, make_config, fresh_bucket, fresh_topic, produce, s3_client
):
    topic = fresh_topic(1)
    # 16 bytes per record: key (2) + value (10) + header key (1) + header value (3)
    records = [
        {"key": f"k{i}".encode(), "value": f"value-{i:04d}".encode(), "headers": [("h", b"abc")]} for i in range(8)
    ]
    produce(topic, records)
    _, config = make_config(
        fresh_bucket, topic, **_props(**{"format.class": "bytearray", "flush.size": "1000", "rotate.size.bytes": "40"})
    )

    Backup(config, engine=engine).run_once()

    d = f"topics/{topic}/partition=0"
    expected = {
        f"{d}/{topic}+0+0000000000.bin": range(3),  # 48 bytes >= 40 after the third record
        f"{d}/{topic}+0+0000000003.bin": range(3, 6),
        f"{d}/{topic}+0+0000000006.bin": range(6, 8),
    }
    assert data_keys(s3_client, fresh_bucket, topic) == sorted(expected)
    for key, offsets in expected.items():
        assert _bin_records(get(s3_client, fresh_bucket, key)) == [f"value-{i:04d}".encode() for i in offsets]


SCHEMA_A = {
    "type": "struct",
    "name": "a_record",
    "optional": False,
    "fields": [{"field": "a", "type": "string", "optional": False}],
}
SCHEMA_B = {
    "type": "struct",
    "name": "b_record",
    "optional": False,
    "fields": [{"field": "b", "type": "int32", "optional": False}, {"field": "c", "type": "string", "optional": True}],
}


def test_schema_change_rolls_the_file(engine, make_config, fresh_bucket, fresh_topic, produce, s3_client):
    topic = fresh_topic(1)
    plan = ["A", "A", "B", "B", "A", "B", "B", "B", "A"]
    values = []
    for n, which in enumerate(plan):
        if which == "A":
            values.append({"schema": SCHEMA_A, "payload": {"a": f"n{n}"}})
        else:
            values.append({"schema": SCHEMA_B, "payload": {"b": n, "c": None}})
    produce(topic, [{"value": json.dumps(v).encode()} for v in values])
    _, config = make_config(
        fresh_bucket,
        topic,
        **_props(
            **{
                "format.class": "avro",
                "flush.size": "3",
                "schema.compatibility": "NONE",
                "value.converter": "org.apache.kafka.connect.json.JsonConverter",
                "value.converter.schemas.enable": "true",
            }
        ),
    )

    summary = Backup(config, engine=engine).run_once()

    d = f"topics/{topic}/partition=0"
    # every schema change rolls; flush.size=3 cuts the run of three B records
    expected = {
        0: ("a_record", [0, 1]),
        2: ("b_record", [2, 3]),
        4: ("a_record", [4]),
        5: ("b_record", [5, 6, 7]),
        8: ("a_record", [8]),
    }
    keys = {start: f"{d}/{topic}+0+{start:010d}.avro" for start in expected}
    assert data_keys(s3_client, fresh_bucket, topic) == sorted(keys.values())
    for start, (name, ns) in expected.items():
        reader = avro.datafile.DataFileReader(
            io.BytesIO(get(s3_client, fresh_bucket, keys[start])), avro.io.DatumReader()
        )
        rows = list(reader)
        assert json.loads(reader.schema)["name"] == name
        assert rows == [{"a": f"n{n}"} if name == "a_record" else {"b": n, "c": None} for n in ns]
    assert summary.objects == 5 and summary.records == 9


# ------------------------------------------------------------------------------------------------ scheduled rotation
class _RecordingBackup(Backup):
    """Records the wall time at which every cycle starts and ends, with the task results."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.cycles: list[dict] = []

    def run_cycle(self, plans):
        started = time.time()
        entry = {"start": started, "plans": plans, "results": []}
        self.cycles.append(entry)
        try:
            return super().run_cycle(plans)
        finally:
            entry["end"] = time.time()


def _next_boundary(after_s: float, interval_ms: int, zone: str) -> float:
    """The first multiple of ``interval_ms`` counted from local midnight strictly after ``after_s`` (seconds)."""
    now = dt.datetime.fromtimestamp(after_s, ZoneInfo(zone))
    midnight = now.replace(hour=0, minute=0, second=0, microsecond=0).timestamp()
    return midnight + ((after_s - midnight) * 1000 // interval_ms + 1) * interval_ms / 1000


@pytest.mark.parametrize("zone", ["UTC", "America/Los_Angeles"])
def test_rotate_schedule_interval_commits_open_files_on_the_wall_clock(
    zone, engine, make_config, fresh_bucket, fresh_topic, produce, s3_client, kafka_bootstrap
):
    interval_ms = 1500
    topic = fresh_topic(1)
    _, config = make_config(
        fresh_bucket,
        topic,
        **_props(
            **{
                "format.class": "bytearray",
                "flush.size": "1000",
                "rotate.schedule.interval.ms": str(interval_ms),
                "timezone": zone,
                "cycle.interval.ms": "100",
            }
        ),
    )
    group = group_id(config)
    produce(topic, [{"value": f"a{i}".encode()} for i in range(5)])
    backup = _RecordingBackup(
        config, engine=engine, on_cycle=lambda report, results: backup.cycles[-1].update(results=results)
    )
    stop = threading.Event()
    errors = []

    def follow():
        try:
            backup.follow(stop)
        except BaseException as exc:  # reported by the test thread
            errors.append(exc)

    thread = threading.Thread(target=follow, daemon=True)
    thread.start()
    try:
        # flush.size is never reached: only the schedule can commit the open file.
        wait_until(lambda: errors or group_offsets(kafka_bootstrap, group, topic, 1)[0] == 5, what="first commit")
        produce(topic, [{"value": f"b{i}".encode()} for i in range(3)])
        wait_until(lambda: errors or group_offsets(kafka_bootstrap, group, topic, 1)[0] == 8, what="second commit")
    finally:
        stop.set()
        thread.join(120)
    assert not errors, errors
    assert not thread.is_alive()

    # The rule itself: once the scheduled time after the chunk was first seen open has passed, the next cycle
    # commits it (a chunk is never carried past its scheduled rotation).
    cycles = [c for c in backup.cycles if "end" in c]
    open_start = due = None
    late = []
    for number, cycle in enumerate(cycles):
        for result in cycle["results"]:
            chunk = result.open_chunk
            if chunk and due is not None and cycle["start"] > due and chunk.start == open_start:
                late.append((number, chunk))
            if not chunk:
                open_start = due = None
            elif chunk.start != open_start:
                open_start, due = chunk.start, _next_boundary(cycle["end"], interval_ms, zone)
    assert not late, f"open chunks carried past their scheduled rotation: {late}"

    keys = data_keys(s3_client, fresh_bucket, topic)
    assert len(keys) >= 2  # the second batch arrived after the first object was committed
    values = []
    for key in keys:
        records = _bin_records(get(s3_client, fresh_bucket, key))
        start = int(key.rsplit("+", 1)[1].split(".")[0])
        assert records, key
        values.append((start, records))
    flat = [v for _, records in sorted(values) for v in records]
    assert flat == [f"a{i}".encode() for i in range(5)] + [f"b{i}".encode() for i in range(3)]
    # Object names match their first offsets.
    position = 0
    for start, records in sorted(values):
        assert start == position
        position += len(records)


def test_follow_picks_up_new_records_and_commits_each_cycle(
    engine, make_config, fresh_bucket, fresh_topic, produce, s3_client, kafka_bootstrap
):
    topic = fresh_topic(2)
    _, config = make_config(
        fresh_bucket, topic, **_props(**{"format.class": "bytearray", "flush.size": "2", "cycle.interval.ms": "100"})
    )
    group = group_id(config)
    produce(topic, [{"partition": p, "value": f"first-{p}-{i}".encode()} for p in range(2) for i in range(4)])
    commits = []
    backup = Backup(
        config,
        engine=engine,
        on_cycle=lambda report, results: commits.append(group_offsets(kafka_bootstrap, group, topic, 2)),
    )
    stop = threading.Event()
    errors = []

    def follow():
        try:
            backup.follow(stop)
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=follow, daemon=True)
    thread.start()
    try:
        wait_until(
            lambda: errors or group_offsets(kafka_bootstrap, group, topic, 2) == {0: 4, 1: 4},
            what="the records present at start",
        )
        produce(topic, [{"partition": p, "value": f"later-{p}-{i}".encode()} for p in range(2) for i in range(6)])
        wait_until(
            lambda: errors or group_offsets(kafka_bootstrap, group, topic, 2) == {0: 10, 1: 10},
            what="records produced after the follow started",
        )
    finally:
        stop.set()
        thread.join(120)
    assert not errors, errors
    # Offsets were committed by the cycles themselves (on_cycle runs after the commit of its cycle).
    assert {0: 4, 1: 4} in commits and commits[-1] == {0: 10, 1: 10}
    for p in range(2):
        keys = [k for k in data_keys(s3_client, fresh_bucket, topic) if f"/partition={p}/" in k]
        assert keys == [f"topics/{topic}/partition={p}/{topic}+{p}+{o:010d}.bin" for o in range(0, 10, 2)]
        flat = [v for k in keys for v in _bin_records(get(s3_client, fresh_bucket, k))]
        assert flat == [f"first-{p}-{i}".encode() for i in range(4)] + [f"later-{p}-{i}".encode() for i in range(6)]
