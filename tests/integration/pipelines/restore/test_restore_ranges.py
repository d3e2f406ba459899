"""Point-in-time and offset-range restores: ``--from-timestamp``/``--until-timestamp`` (ISO-8601 or epoch ms, on
envelope backups, which keep record timestamps) and ``--from-offset``/``--until-offset`` (``P:O`` and ``TOPIC:P:O``,
per partition), through the Restore API and once through the command line."""

from __future__ import annotations

import datetime as dt

import pytest

from kafka_s3.core.errors import ConfigError
from kafka_s3.pipelines.read.options import RestoreOptions, parse_offsets, parse_time
from tests.support.restore import (
    fidelity,
    read_topic,
    restore_progress,
    run_cli,
    write_properties,
)

pytestmark = pytest.mark.integration

PARTITIONS, PER_PARTITION = 2, 10
T0 = int(dt.datetime(2024, 5, 1, 12, 0, tzinfo=dt.UTC).timestamp() * 1000)
MINUTE = 60_000
ENVELOPE = {"format.class": "avro", "store.envelope": "true"}


@pytest.fixture
def source(backup, fresh_bucket, fresh_topic, produce):
    """A 2-partition topic, record i of each partition stamped T0 + i minutes, backed up with envelopes."""
    topic = fresh_topic(PARTITIONS)
    produce(
        topic,
        [
            {
                "partition": p,
                "key": f"{p}-{i}".encode(),
                "value": f"v{p}-{i}".encode(),
                "headers": [("i", str(i).encode())],
                "timestamp": T0 + i * MINUTE,
            }
            for p in range(PARTITIONS)
            for i in range(PER_PARTITION)
        ],
    )
    backup(fresh_bucket, topic, ENVELOPE)
    return topic


def expect(bootstrap, topic, selected) -> dict[int, list[tuple]]:
    """The source records whose (partition, offset, timestamp) ``selected`` accepts, per partition."""
    original = read_topic(bootstrap, topic)
    return {p: fidelity([r for r in rows if selected(p, r["offset"], r["timestamp"])]) for p, rows in original.items()}


def restored(bootstrap, target) -> dict[int, list[tuple]]:
    return {p: fidelity(rows) for p, rows in read_topic(bootstrap, target).items()}


@pytest.mark.parametrize(
    ("start", "end"),
    [
        (str(T0 + 2 * MINUTE), str(T0 + 5 * MINUTE)),
        ("2024-05-01T12:02:00Z", "2024-05-01T14:05:00+02:00"),  # UTC and another offset
        ("2024-05-01T12:02:00", "2024-05-01T12:04:30.000"),  # no offset: UTC; a bound between two records
    ],
    ids=["epoch-ms", "iso-8601-zones", "iso-8601-naive"],
)
def test_point_in_time_restore(start, end, source, restorer, fresh_bucket, fresh_topic, kafka_bootstrap):
    target = fresh_topic(PARTITIONS)
    options = RestoreOptions(from_timestamp=parse_time(start), until_timestamp=parse_time(end))
    summary = restorer(fresh_bucket, source, {**ENVELOPE, "topic.rename": f"{source}:{target}"}, options).run()
    assert summary.records == PARTITIONS * 3
    wanted = expect(kafka_bootstrap, source, lambda p, o, ts: T0 + 2 * MINUTE <= ts < T0 + 5 * MINUTE)
    assert restored(kafka_bootstrap, target) == wanted
    assert all(len(rows) == 3 for rows in wanted.values())


def test_offset_ranges_per_partition(source, restorer, fresh_bucket, fresh_topic, kafka_bootstrap):
    target = fresh_topic(PARTITIONS)
    options = RestoreOptions(
        from_offsets=parse_offsets(f"0:4,{source}:1:7", "--from-offset"),
        until_offsets=parse_offsets("0:8", "--until-offset"),
    )
    restore = restorer(fresh_bucket, source, {**ENVELOPE, "topic.rename": f"{source}:{target}"}, options)
    summary = restore.run()
    assert [(r.source_partition, r.first_source_offset, r.last_source_offset) for r in summary.results] == [
        (0, 4, 7),
        (1, 7, 9),
    ]
    assert restored(kafka_bootstrap, target) == expect(
        kafka_bootstrap, source, lambda p, o, ts: 4 <= o < 8 if p == 0 else o >= 7
    )
    assert restore_progress(kafka_bootstrap, restore.config, source, target) == {0: 8, 1: 10}


def test_offsets_and_time_combined_through_the_cli(
    source, make_config, fresh_bucket, fresh_topic, kafka_bootstrap, tmp_path
):
    target = fresh_topic(PARTITIONS)
    raw, _ = make_config(
        fresh_bucket,
        source,
        source=True,
        **{k.replace(".", "__"): v for k, v in ENVELOPE.items()},
        topic__rename=f"{source}:{target}",
    )
    config = write_properties(tmp_path / "restore.properties", raw)
    result = run_cli(
        [
            "restore",
            "--config",
            str(config),
            "--master",
            "local[2]",
            "--from-timestamp",
            "2024-05-01T12:02:00Z",
            "--until-timestamp",
            str(T0 + 9 * MINUTE),
            "--from-offset",
            "0:3",
            "--until-offset",
            f"{source}:1:6",
        ]
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "restore summary" in result.stdout and "10 records restored" in result.stdout, result.stdout
    # partition 0: offsets >= 3 and minutes 2..8 → 3..8; partition 1: offsets < 6 and minutes 2..8 → 2..5
    assert restored(kafka_bootstrap, target) == expect(
        kafka_bootstrap,
        source,
        lambda p, o, ts: T0 + 2 * MINUTE <= ts < T0 + 9 * MINUTE and (o >= 3 if p == 0 else o < 6),
    )


def test_cli_rejects_a_malformed_offset_before_starting(make_config, fresh_bucket, tmp_path):
    raw, _ = make_config(
        fresh_bucket, "some-topic", source=True, **{k.replace(".", "__"): v for k, v in ENVELOPE.items()}
    )
    config = write_properties(tmp_path / "restore.properties", raw)
    result = run_cli(["restore", "--config", str(config), "--from-offset", "0-5"])
    assert result.returncode == 2
    assert "--from-offset: expected PARTITION:OFFSET or TOPIC:PARTITION:OFFSET, got '0-5'" in result.stderr


def test_timestamps_need_an_envelope_backup(backup, restorer, fresh_bucket, fresh_topic, produce, kafka_bootstrap):
    topic = fresh_topic(1)
    produce(topic, [{"value": b"x", "timestamp": T0}])
    plain = {"format.class": "bytearray"}
    backup(fresh_bucket, topic, plain)
    target = fresh_topic(1)
    restore = restorer(
        fresh_bucket, topic, {**plain, "topic.rename": f"{topic}:{target}"}, RestoreOptions(from_timestamp=T0)
    )
    with pytest.raises(ConfigError, match="store.envelope=true") as failure:
        restore.run()
    assert failure.value.key == "store.envelope"
    assert read_topic(kafka_bootstrap, target) == {0: []}
