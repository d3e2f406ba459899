"""Issue 15 item 6 (B1, B4): a Lenses sink configuration's objects on a local store: Lenses' names (decided when an
object closes), its lock objects, and a replayed chunk giving the same name.

What Lenses writes, from its source (LS = lensesio/stream-reactor ``kafka-connect-cloud-common``):

- ``sink/naming/FileNamer.OffsetFileNamer.fileName``: ``<offset padded>_<earliestRecordTimestamp>_<latestRecord
  Timestamp>.<ext>`` under ``<prefix>/<topic>/<partition>/`` (``CloudKeyNamer``); the offset is the **last**
  record's (``writer/Writer.commit`` builds the key from ``uncommittedOffset``), the earliest timestamp the smallest
  of the file's records (``writer/WriteState.Writing.update``: ``math.min``), padding 12 digits
  (``config/padding/PaddingService``);
- ``seek/IndexManagerV2`` + ``seek/IndexModel.IndexFile`` (circe, compact): ``.indexes/<connector>/.locks/<topic>/
  <partition>.lock`` = ``{"owner":"<uuid>","committedOffset":<last offset>,"pendingState":null}``.
"""

from __future__ import annotations

import json
import re

import pytest

from kafka_s3.core.config.sink import SINK
from kafka_s3.core.records import make_batch
from kafka_s3.io.stores.spec import StoreSpec
from kafka_s3.pipelines.backup.partition import PartitionBackup
from kafka_s3.pipelines.backup.plugins import BackupPlugins

LENSES_SINK = "io.lenses.streamreactor.connect.aws.s3.sink.S3SinkConnector"
# timestamps out of order inside a file: the name holds the smallest and the largest
TIMESTAMPS = [1000, 900, 1100, 2000, None, 1500, 3000, 3001]


@pytest.fixture
def setup(tmp_path):
    config = SINK.parse(
        {
            "name": "lenses-sink",
            "connector.class": LENSES_SINK,
            "connect.s3.kcql": "INSERT INTO b:lenses/in SELECT * FROM t STOREAS `JSON` "
            "PROPERTIES('store.envelope'=true, 'flush.count'=3)",
            "key.converter": "org.apache.kafka.connect.storage.StringConverter",
            "value.converter": "org.apache.kafka.connect.storage.StringConverter",
            "store.url": tmp_path.as_uri(),
        }
    )
    store = StoreSpec.from_config(config, environ={}).open()
    store.create_bucket()
    return BackupPlugins.from_config(config), store


def _records(start, stop):
    return make_batch(
        [
            {"topic": "t", "offset": o, "key": b"k%d" % o, "value": b"v%d" % o, "timestamp": TIMESTAMPS[o]}
            for o in range(start, stop)
        ]
    )


def _objects(store):
    return {i.key: store.get(i.key) for i in store.list("") if "/_kafka-s3/" not in i.key}


def _line(offset: int) -> bytes:
    """An envelope line as LS SchemalessEnvelopeTransformer + Jackson write it (key order: java.util.HashMap's)."""
    timestamp = TIMESTAMPS[offset]
    metadata = f'"partition":0,"offset":{offset},"topic":"t"' + (
        f',"timestamp":{timestamp}' if timestamp is not None else ""
    )
    return f'{{"headers":{{}},"metadata":{{{metadata}}},"value":"v{offset}","key":"k{offset}"}}\n'.encode()


def test_lenses_names_hold_last_offset_and_min_max_timestamps_and_the_lock_follows(setup):
    plugins, store = setup
    writer = PartitionBackup(plugins, store, "t", 0)
    writer.write(_records(0, 8))
    result = writer.finish(8, flush_open=False)
    assert [(c.start, c.end) for c in result.chunks] == [(0, 2), (3, 5)]
    lock = ".indexes/lenses-sink/.locks/t/0.lock"
    objects = _objects(store)
    assert sorted(objects) == sorted(
        [
            "lenses/in/t/0/000000000002_900_1100.json",
            "lenses/in/t/0/000000000005_-1_2000.json",  # offset 4 has no timestamp: -1
            lock,
        ]
    )
    assert objects["lenses/in/t/0/000000000002_900_1100.json"] == b"".join(_line(o) for o in range(3))
    assert objects["lenses/in/t/0/000000000005_-1_2000.json"] == b"".join(_line(o) for o in range(3, 6))
    body = objects[lock]
    assert re.fullmatch(rb'\{"owner":"[0-9a-f-]{36}","committedOffset":5,"pendingState":null\}', body)
    assert json.loads(body)["committedOffset"] == 5


def test_a_replayed_lenses_chunk_produces_the_same_name_and_bytes(setup):
    """A chunk whose manifest exists but whose object never completed (a crash between the two) is written again on
    the next run under the same name: the name depends only on the chunk's records."""
    plugins, store = setup
    first = PartitionBackup(plugins, store, "t", 0)
    first.write(_records(0, 8))
    first.finish(8, flush_open=False)
    whole = _objects(store)
    store.delete(["lenses/in/t/0/000000000005_-1_2000.json"])

    again = PartitionBackup(plugins, store, "t", 0)
    again.write(_records(0, 8))
    result = again.finish(8, flush_open=False)

    assert _objects(store) == whole
    assert result.replayed_files == 1  # the first chunk's object was there; the second one written again
    assert [e.key for c in result.chunks for e in c.files] == [
        "lenses/in/t/0/000000000002_900_1100.json",
        "lenses/in/t/0/000000000005_-1_2000.json",
    ]


def test_lock_moves_with_every_commit(setup):
    plugins, store = setup
    first = PartitionBackup(plugins, store, "t", 0)
    first.write(_records(0, 3))
    first.finish(3, flush_open=False)
    lock = ".indexes/lenses-sink/.locks/t/0.lock"
    assert json.loads(store.get(lock))["committedOffset"] == 2
    second = PartitionBackup(plugins, store, "t", 0)
    second.write(_records(3, 8))
    second.finish(8, flush_open=True)
    assert json.loads(store.get(lock))["committedOffset"] == 7
    assert "lenses/in/t/0/000000000007_3000_3001.json" in _objects(store)


def test_an_open_lenses_object_left_at_the_end_of_a_cycle_leaves_nothing_behind(setup):
    """The open chunk of a cycle is discarded (the next cycle reads it again): its staged bytes go, no object, no
    manifest and no lock appear."""
    plugins, store = setup
    writer = PartitionBackup(plugins, store, "t", 0)
    writer.write(_records(0, 2))
    result = writer.finish(2, flush_open=False)
    assert result.chunks == () and result.open_chunk.start == 0
    assert list(store.list("")) == []
