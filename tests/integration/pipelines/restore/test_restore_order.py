"""Order across directories: a field-partitioned backup spreads each source partition over several directories.
With envelopes (stored offsets) the restore merges the objects by offset, so the order is exact; without, it warns
that the order across directories cannot be kept — and still restores every record exactly once, also when resumed
after a fault."""

from __future__ import annotations

import json
import logging
import re
from collections import Counter

import pytest

from kafka_s3.core.errors import RestoreFailed
from tests.support.integration import list_keys
from tests.support.restore import fidelity, get_object, read_topic, replace_object, same_size_garbage

pytestmark = pytest.mark.integration

PARTITIONS, PER_PARTITION = 2, 14
KINDS = "aababbbaabaaab"  # directories kind=a / kind=b, interleaved irregularly
# flush.size=5 counts the records of all directories together (Confluent's chunk): each chunk's directories hold
# interleaved offsets, e.g. kind=a 0,1,3 and kind=b 2,4.
FIELD = {
    "partitioner.class": "field",
    "partition.field.name": "kind",
    "flush.size": "5",
    "value.converter": "org.apache.kafka.connect.json.JsonConverter",
    "value.converter.schemas.enable": "false",
}
ENVELOPE = {**FIELD, "format.class": "avro", "store.envelope": "true"}
PLAIN = {**FIELD, "format.class": "json"}


def source_records() -> list[dict]:
    return [
        {
            "partition": p,
            "key": f"{p}-{i}".encode(),
            "value": json.dumps({"kind": KINDS[i], "p": p, "i": i}).encode(),
            "headers": [("i", str(i).encode())],
            "timestamp": 1_700_000_000_000 + i,
        }
        for p in range(PARTITIONS)
        for i in range(PER_PARTITION)
    ]


def directories(s3_client, bucket, topic, partition) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for key in list_keys(s3_client, bucket, f"topics/{topic}/"):
        if f"/{topic}+{partition}+" in key:
            out.setdefault(key.split("/")[2], []).append(key)
    return out


def starts(keys: list[str]) -> list[int]:
    return [int(key.rsplit("+", 1)[1].split(".")[0]) for key in keys]


def damage(s3_client, bucket, topic, which: int) -> tuple[str, bytes]:
    """Replace the ``which``-th object of directory kind=b of partition 0 with garbage; → (key, its good bytes)."""
    key = directories(s3_client, bucket, topic, 0)["kind=b"][which]
    good = get_object(s3_client, bucket, key)
    replace_object(s3_client, bucket, key, same_size_garbage(good))
    return key, good


def test_envelope_objects_in_several_directories_restore_in_exact_order(
    backup, restorer, fresh_bucket, fresh_topic, produce, s3_client, kafka_bootstrap, caplog
):
    topic = fresh_topic(PARTITIONS)
    produce(topic, source_records())
    backup(fresh_bucket, topic, ENVELOPE)
    dirs = directories(s3_client, fresh_bucket, topic, 0)
    assert {d: starts(keys) for d, keys in dirs.items()} == {"kind=a": [0, 7, 10], "kind=b": [2, 5, 13]}
    target = fresh_topic(PARTITIONS)
    properties = {**ENVELOPE, "topic.rename": f"{topic}:{target}"}

    # Interrupted by a damaged object (kind=b, offsets 5, 6, 9), then resumed once it is repaired.
    key, good = damage(s3_client, fresh_bucket, topic, 1)
    caplog.set_level(logging.WARNING, logger="kafka_s3")
    with pytest.raises(RestoreFailed, match=re.escape(key)):
        restorer(fresh_bucket, topic, properties).run()
    replace_object(s3_client, fresh_bucket, key, good)
    restorer(fresh_bucket, topic, properties).run()

    restored, original = read_topic(kafka_bootstrap, target), read_topic(kafka_bootstrap, topic)
    assert {p: fidelity(rows) for p, rows in restored.items()} == {p: fidelity(rows) for p, rows in original.items()}
    assert not [r for r in caplog.records if "directories" in r.getMessage()]  # no order warning: it is exact


def test_plain_objects_in_several_directories_warn_and_restore_every_record_once(
    backup, restorer, fresh_bucket, fresh_topic, produce, s3_client, kafka_bootstrap, caplog
):
    topic = fresh_topic(PARTITIONS)
    produce(topic, source_records())
    backup(fresh_bucket, topic, PLAIN)
    target = fresh_topic(PARTITIONS)
    properties = {**PLAIN, "topic.rename": f"{topic}:{target}", "restore.transaction.records": "1"}

    # Interrupted by a damaged object (kind=b, offsets 2 and 4) after kind=a's first (0, 1, 3), then resumed.
    key, good = damage(s3_client, fresh_bucket, topic, 0)
    caplog.set_level(logging.WARNING, logger="kafka_s3")
    with pytest.raises(RestoreFailed, match=re.escape(key)):
        restorer(fresh_bucket, topic, properties).run()
    warnings = [r.getMessage() for r in caplog.records if "directories" in r.getMessage()]
    assert any(f"{topic}[0]: objects in 2 directories without stored offsets" in w for w in warnings), warnings
    assert any("store.envelope=true" in w for w in warnings)
    replace_object(s3_client, fresh_bucket, key, good)
    restorer(fresh_bucket, topic, properties).run()

    restored, original = read_topic(kafka_bootstrap, target), read_topic(kafka_bootstrap, topic)
    for p in range(PARTITIONS):
        got = [json.loads(r["value"]) for r in restored[p]]
        assert Counter(json.dumps(v, sort_keys=True) for v in got) == Counter(
            json.dumps(json.loads(r["value"]), sort_keys=True) for r in original[p]
        ), p  # each record exactly once
        for kind in "ab":  # within one directory the order is the original one
            assert [v["i"] for v in got if v["kind"] == kind] == [i for i, k in enumerate(KINDS) if k == kind]
