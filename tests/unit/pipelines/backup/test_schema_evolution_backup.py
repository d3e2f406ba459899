"""schema.compatibility in the backup: the batched rotator against a record-by-record model, and PartitionBackup
(AvroConverter with an in-memory registry, a local store) writing the three schema versions under every mode."""

from __future__ import annotations

import io
import json
import uuid

import fastavro
import numpy as np
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_s3.core.config.sink import SINK
from kafka_s3.core.converters.base import ValueSchema
from kafka_s3.core.errors import ConversionError
from kafka_s3.core.records import make_batch
from kafka_s3.core.rotation import RotationPolicy, Rotator
from kafka_s3.core.schema_evolution import decide
from kafka_s3.io.schema_registry.client import registry_client
from kafka_s3.io.stores.spec import StoreSpec
from kafka_s3.pipelines.backup.partition import PartitionBackup
from kafka_s3.pipelines.backup.plugins import BackupPlugins
from tests.support.avro_versions import VERSIONS, read_as, record, register_versions, wire


# -------------------------------------------------------------------------------------- rotator vs record model
def judged_rolls(mode: str, unprojectable: set[tuple[str, str]]):
    """``rolls(current, incoming)`` for schemas named ``s<version>``, as the SchemaJudge decides it."""

    def schema(name: str) -> ValueSchema:
        return ValueSchema(avro=name, arrow=None, fingerprint=name, version=int(name[1:]))

    def rolls(current: str, incoming: str) -> bool:
        return (
            decide(
                mode,
                schema(current),
                schema(incoming),
                lambda s, t: (s.fingerprint, t.fingerprint) not in unprojectable,
            ).value
            == "roll"
        )

    return rolls


def reference_cuts(records, flush_size: int, rolls):
    """Confluent's TopicPartitionWriter record by record: each encoded partition's file keeps the schema of its first
    record until the chunk commits; a record whose schema rolls that file commits the chunk before it."""
    chunks, current, schemas = [], [], {}
    for offset, enc, schema in records:
        if current and schema and enc in schemas and schemas[enc] != schema and rolls(schemas[enc], schema):
            chunks.append(current)
            current, schemas = [], {}
        if schema:
            schemas.setdefault(enc, schema)
        current.append(offset)
        if len(current) >= flush_size:
            chunks.append(current)
            current, schemas = [], {}
    return chunks, current


def batched_cuts(records, flush_size: int, rolls, batch_sizes):
    rotator = Rotator(RotationPolicy(flush_size=flush_size), schema_rolls=rolls)
    chunks, current, i = [], [], 0
    sizes = iter(batch_sizes)
    while i < len(records):
        batch = records[i : i + max(1, next(sizes, 7))]
        i += len(batch)
        offsets = np.array([r[0] for r in batch], dtype=np.int64)
        dictionary = sorted({r[1] for r in batch})
        codes = np.array([dictionary.index(r[1]) for r in batch])
        names = sorted({r[2] for r in batch})
        schema_codes = np.array([names.index(r[2]) for r in batch]) if len(names) > 1 else None
        for seg in rotator.split(offsets, codes, dictionary, None, np.zeros(len(batch)), schema_codes, names, 0):
            current.extend(int(o) for o in offsets[seg.start : seg.end])
            if seg.close:
                chunks.append(current)
                current = []
    return chunks, current


@settings(max_examples=300, deadline=None)
@given(
    rows=st.lists(st.tuples(st.sampled_from(["a", "b"]), st.sampled_from(["s1", "s2", "s3", ""])), max_size=80),
    flush=st.integers(1, 15),
    mode=st.sampled_from(["NONE", "BACKWARD", "FORWARD", "FULL"]),
    unprojectable=st.sets(st.sampled_from([(a, b) for a in ("s1", "s2", "s3") for b in ("s1", "s2", "s3") if a != b])),
    batch_sizes=st.lists(st.integers(1, 25), max_size=30),
)
def test_batched_cuts_match_the_record_model_in_every_mode(rows, flush, mode, unprojectable, batch_sizes):
    records = [(o + 100, enc, schema) for o, (enc, schema) in enumerate(rows)]
    rolls = judged_rolls(mode, unprojectable)
    assert batched_cuts(records, flush, rolls, batch_sizes) == reference_cuts(records, flush, rolls)


def test_interleaved_versions_do_not_give_a_file_per_record_in_the_model():
    """v1, v2, v1, v2... (two producers on two schema versions): NONE must roll at every change, as the seeds say;
    BACKWARD rolls once per chunk at most (the first v2 after a v1 start), then projects."""
    records = [(o, "p", "s1" if o % 2 == 0 else "s2") for o in range(100)]
    chunks_none, tail_none = reference_cuts(records, 20, judged_rolls("NONE", set()))
    chunks_backward, tail_backward = batched_cuts(records, 20, judged_rolls("BACKWARD", set()), [33, 33, 34])
    assert len(chunks_none) + bool(tail_none) == 100
    assert [len(c) for c in chunks_backward] == [1, 20, 20, 20, 20] and tail_backward == list(range(81, 100))


# ------------------------------------------------------------------------------------------ PartitionBackup
SEQUENCE = [1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 1, 2, 3]  # v1, v2, v3 in turn, then one record of each again


@pytest.fixture
def backup_of(tmp_path, request):
    """``backup_of(sequence, mode, fmt, batches)`` → (objects {file name: records}, chunk cuts) of a backup of records
    written with those schema versions, through AvroConverter and an in-memory registry."""
    counter = iter(range(1000))

    def run(sequence, mode, fmt="avro", batches=(6,), flush_size=100, extra=None):
        url = f"mock://evolution-{uuid.uuid4().hex}"
        ids = register_versions(registry_client({"url": url}), "t-value")
        root = tmp_path / f"store{next(counter)}"
        config = SINK.parse(
            {
                "name": "n",
                "topics": "t",
                "flush.size": str(flush_size),
                "s3.bucket.name": "b",
                "format.class": fmt,
                "store.url": root.as_uri(),
                "schema.compatibility": mode,
                "value.converter": "io.confluent.connect.avro.AvroConverter",
                "value.converter.schema.registry.url": url,
                **(extra or {}),
            }
        )
        store = StoreSpec.from_config(config, environ={}).open()
        store.create_bucket()
        values = [None if v is None else wire(ids[v], v, record(v, o)) for o, v in enumerate(sequence)]
        batch_records = [{"topic": "t", "offset": o, "value": v} for o, v in enumerate(values)]
        writer = PartitionBackup(BackupPlugins.from_config(config), store, "t", 0)
        i = 0
        for size in list(batches) + [len(batch_records)]:
            if i < len(batch_records):
                writer.write(make_batch(batch_records[i : i + size]))
                i += size
        result = writer.finish(len(batch_records), flush_open=True)
        objects = {}
        for info in store.list("topics/t/"):
            if ".keys." in info.key:  # keys sidecars (behavior.on.null.values=write keeps tombstones there)
                continue
            data = store.get(info.key)
            name = info.key.rsplit("/", 1)[1]
            if fmt == "avro":
                reader = fastavro.reader(io.BytesIO(data))
                objects[name] = (reader.writer_schema, list(reader))
            elif fmt == "parquet":
                table = pq.read_table(io.BytesIO(data))
                objects[name] = (json.loads(table.schema.metadata[b"parquet.avro.schema"]), table.to_pylist())
            else:
                objects[name] = (None, [json.loads(line) for line in data.decode().splitlines()])
        return objects, [(c.start, c.end) for c in result.chunks], store

    return run


def _name(start: int, fmt: str = "avro") -> str:
    return f"t+0+{start:010d}." + {"avro": "avro", "parquet": "snappy.parquet", "json": "json"}[fmt]


@pytest.mark.parametrize("fmt", ["avro", "parquet"])
def test_none_rolls_on_every_schema_change_and_keeps_each_writer_schema(backup_of, fmt):
    objects, cuts, _ = backup_of(SEQUENCE, "NONE", fmt)
    assert cuts == [(0, 3), (4, 7), (8, 11), (12, 12), (13, 13), (14, 14)]
    for start, version in [(0, 1), (4, 2), (8, 3), (12, 1), (13, 2), (14, 3)]:
        schema, rows = objects[_name(start, fmt)]
        assert [f["name"] for f in schema["fields"]] == [f["name"] for f in VERSIONS[version]["fields"]]
        assert rows == [record(v, o) for o, v in enumerate(SEQUENCE) if o in range(start, _end(cuts, start) + 1)]


def _end(cuts, start):
    return next(end for s, end in cuts if s == start)


@pytest.mark.parametrize("mode", ["BACKWARD", "FULL"])
@pytest.mark.parametrize("fmt", ["avro", "parquet"])
def test_backward_and_full_roll_on_newer_versions_and_project_older_records_to_the_latest(backup_of, mode, fmt):
    objects, cuts, _ = backup_of(SEQUENCE, mode, fmt)
    assert cuts == [(0, 3), (4, 7), (8, 14)]
    schema, rows = objects[_name(8, fmt)]
    assert [f["name"] for f in schema["fields"]] == ["id", "customer", "quantity", "channel"]
    # v3's own records, then the late v1 and v2 records read with v3: added field defaulted, removed one dropped
    assert rows == [record(3, o) for o in range(8, 12)] + [
        read_as(record(1, 12), 1, 3),
        read_as(record(2, 13), 2, 3),
        record(3, 14),
    ]
    assert rows[4] == {"id": 12, "customer": "c12", "quantity": 12, "channel": "web"}


@pytest.mark.parametrize("fmt", ["avro", "parquet"])
def test_forward_projects_newer_records_to_the_oldest_and_rolls_on_older_ones(backup_of, fmt):
    objects, cuts, _ = backup_of(SEQUENCE, "FORWARD", fmt)
    # v2 records join v1's file (projected to v1); v3's long cannot be read as v1's int: roll (Confluent would stop);
    # the late v1 rolls (older than v3); the late v2 joins it, projected; the last v3 rolls again.
    assert cuts == [(0, 7), (8, 11), (12, 13), (14, 14)]
    schema, rows = objects[_name(0, fmt)]
    assert [f["name"] for f in schema["fields"]] == ["id", "customer", "note", "quantity"]
    assert rows == [record(1, o) for o in range(4)] + [read_as(record(2, o), 2, 1) for o in range(4, 8)]
    assert objects[_name(12, fmt)][1] == [record(1, 12), read_as(record(2, 13), 2, 1)]


@pytest.mark.parametrize("mode", ["NONE", "BACKWARD", "FORWARD", "FULL"])
def test_cuts_and_bytes_do_not_depend_on_batching(backup_of, mode):
    sequence = [1, 2, 1, 3, 3, 1, 2, 2, 3, 1, 1, 2] * 3
    first, cuts, _ = backup_of(sequence, mode, "avro", batches=(1,) * 40, flush_size=7)
    second, cuts_again, _ = backup_of(sequence, mode, "avro", batches=(len(sequence),), flush_size=7)
    third, cuts_third, _ = backup_of(sequence, mode, "avro", batches=(5, 11, 2), flush_size=7)
    assert cuts == cuts_again == cuts_third
    assert first == second == third


def test_interleaved_versions_file_count(backup_of):
    """Two producers on v1 and v2 interleaved, 60 records, flush.size=20 (Confluent's known small-files complaint).
    NONE must roll at every change (the seeds): one file per record. BACKWARD: the first v1 record's file rolls at
    the first (newer) v2, then each chunk is a v2 file with the v1 records projected into it: 4 files. FORWARD: v2
    records are projected into v1 files: 3 files, one per flush.size."""
    sequence = [1, 2] * 30
    none, _, _ = backup_of(sequence, "NONE", "avro", batches=(17, 17), flush_size=20)
    backward, backward_cuts, _ = backup_of(sequence, "BACKWARD", "avro", batches=(17, 17), flush_size=20)
    forward, forward_cuts, _ = backup_of(sequence, "FORWARD", "avro", batches=(17, 17), flush_size=20)
    assert len(none) == 60
    assert backward_cuts == [(0, 0), (1, 20), (21, 40), (41, 59)] and len(backward) == 4
    schemas = [backward[_name(start)][0] for start, _ in backward_cuts]
    assert [len(s["fields"]) for s in schemas] == [4, 5, 5, 5]  # v1, then v2 files
    assert forward_cuts == [(0, 19), (20, 39), (40, 59)] and len(forward) == 3


def test_tombstones_fit_any_file_whatever_the_batching(backup_of):
    """A tombstone between schema versions belongs to no schema: it never rolls a file (behavior.on.null.values=write
    keeps it apart, as Confluent's TombstoneSupportedPartitioner does: keys sidecar in ``tombstone/``), and the cuts
    do not depend on which batch (or run) it arrives in."""
    sequence = [3, 3, None, 1, None, 2, 3, None]
    write = {"behavior.on.null.values": "write", "store.kafka.keys": "true", "key.converter": "bytearray"}
    results = [
        backup_of(sequence, "BACKWARD", "json", batches=batches, extra=write)[:2]
        for batches in [(1,) * 8, (2, 1, 5), (8,), (3, 3), (2, 6)]
    ]
    assert all(r == results[0] for r in results)
    objects, cuts = results[0]
    assert cuts == [(0, 7)]
    rows = objects[_name(0, "json")][1]
    assert None not in rows and rows[2] == {"id": 3, "customer": "c3", "quantity": 3, "channel": "web"}
    none_results = [
        backup_of(sequence, "NONE", "json", batches=batches, extra=write)[1]
        for batches in [(1,) * 8, (3, 5), (8,), (2, 6)]
    ]
    assert all(r == none_results[0] for r in none_results)


def test_unversioned_schemas_under_backward_fail_naming_the_record(tmp_path):
    """JsonConverter schemas without a version cannot be ordered: the record that needs it is named."""
    config = SINK.parse(
        {
            "name": "n",
            "topics": "t",
            "flush.size": "10",
            "s3.bucket.name": "b",
            "format.class": "avro",
            "store.url": tmp_path.as_uri(),
            "schema.compatibility": "BACKWARD",
            "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        }
    )
    store = StoreSpec.from_config(config, environ={}).open()
    store.create_bucket()
    a = {"type": "struct", "optional": False, "fields": [{"field": "x", "type": "int32", "optional": False}]}
    b = {**a, "fields": a["fields"] + [{"field": "y", "type": "int32", "optional": True}]}
    values = [json.dumps({"schema": s, "payload": {"x": 1}}).encode() for s in (a, a, b)]
    writer = PartitionBackup(BackupPlugins.from_config(config), store, "t", 0)
    with pytest.raises(ConversionError, match=r"t\[0\] offset 42: schema.compatibility=BACKWARD needs schema versions"):
        writer.write(make_batch([{"topic": "t", "offset": 40 + i, "value": v} for i, v in enumerate(values)]))
