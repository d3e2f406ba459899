"""``kafka-s3 ls``/``info`` over a directory store (issue 29 item 5): backups found by walking the prefixes, a backup's
tree not walked, offsets and times from the first and last manifests only."""

from __future__ import annotations

import pytest

from kafka_s3.core.config.sink import SINK
from kafka_s3.core.errors import ConfigError, NoBackupFound
from kafka_s3.core.manifest import FileEntry, Manifest, ManifestStore, record_name
from kafka_s3.core.store import Store
from kafka_s3.io.stores.spec import StoreSpec
from kafka_s3.pipelines.catalogue import Found, catalogue, details, find_backups


@pytest.fixture
def store(tmp_path) -> Store:
    raw = {"name": "t", "topics": "-", "flush.size": "1", "format.class": "json", "s3.bucket.name": "b"}
    opened = StoreSpec.from_config(SINK.parse({**raw, "store.url": f"file://{tmp_path}"})).open()
    opened.create_bucket()
    return opened


def chunk(topic: str, start: int, end: int, root: str) -> Manifest:
    key = f"{root}/{topic}/partition=0/{topic}+0+{start:010d}.json"
    data = FileEntry(
        key, "data", end - start + 1, start, end, 10, first_timestamp=start * 1000, last_timestamp=end * 1000
    )
    return Manifest(topic, 0, start, end, (data,))


def back_up(store: Store, root: str, topic: str, cuts: list[tuple[int, int]]) -> None:
    """Chunks of partition 0 as a backup commits them: manifest, data object, committed mark."""
    manifests = ManifestStore(store, f"{root}/_kafka-s3/json")
    for start, end in cuts:
        manifest = manifests.create(chunk(topic, start, end, root))
        store.put(manifest.files[0].key, b"x" * 10)
        manifests.mark_committed(topic, 0, start)


@pytest.mark.issue(29, item=5)
def test_backups_under_their_own_prefixes_are_found_side_by_side_and_described(store):
    back_up(store, "east/prod/topics", "orders", [(0, 2), (3, 5), (6, 8)])
    back_up(store, "west", "clicks", [(0, 4)])
    store.put("legacy/payments/partition=0/payments+0+0000000000.json", b'{"a":1}\n')
    store.put("notes/readme.txt", b"not a backup")

    assert find_backups(store) == [
        Found("east/prod/topics", "kafka-s3"),
        Found("legacy", "confluent"),
        Found("west", "kafka-s3"),
    ]
    east, legacy, west = catalogue(store, names={"west": "backup-west"})
    assert (east.topics, east.layout, east.format, east.objects, east.bytes) == (
        ["orders"],
        "kafka-s3",
        "JSON objects (.json)",
        3,
        30,
    )
    (orders,) = east.partitions
    assert (orders.first_offset, orders.last_offset, orders.first_time, orders.last_time) == (0, 8, 0, 8000)
    assert (orders.chunks, orders.unfinished_chunks) == (3, ())
    assert (west.name, east.name, legacy.layout, legacy.partitions[0].last_offset) == (
        "backup-west",
        None,
        "confluent",
        None,
    )
    assert legacy.partitions[0].last_object_offset == 0
    assert [e.topics_dir for e in catalogue(store, topics=["clicks"])] == ["west"]  # -t: only its backups
    with pytest.raises(NoBackupFound, match="holds no backup of nothing"):
        catalogue(store, topics=["nothing"])


@pytest.mark.issue(29, item=5)
def test_info_names_the_chunk_not_committed_yet_and_wants_one_backup(store):
    back_up(store, "topics", "orders", [(0, 2)])
    ManifestStore(store, "topics/_kafka-s3/json").create(chunk("orders", 3, 5, "topics"))  # no mark: uploading

    found = details(store, "topics")
    (orders,) = found.entry.partitions
    assert (orders.last_offset, orders.unfinished_chunks) == (2, (3,))  # the committed end, and what is beyond it
    assert found.to_dict()["unfinished_chunks"] == 1
    assert found.compaction.startswith("no merge in progress; 2 chunk(s) in 1 partition(s)"), found.compaction

    store.put(f"topics/_kafka-s3/json/orders/0/{record_name(0)}", b"{}")  # a merge kafka-s3 compact left (a crash)
    assert details(store, "topics").compaction == (
        "1 merge(s) not finished (orders[0] from offset 0): kafka-s3 compact finishes them"
    )

    back_up(store, "other", "clicks", [(0, 0)])
    with pytest.raises(ConfigError, match="holds 2 backups"):
        details(store, "")
    with pytest.raises(NoBackupFound, match="holds no backup"):
        catalogue(store, "nothing-here")


@pytest.mark.issue(29, item=5)
def test_a_deviantart_backup_is_found_under_its_upload_dates(store):
    data = "da/2017-02-01/payments-00000-000000000000.gz"
    store.put(data, b"x" * 20)
    store.put(data + ".index.json", b"{}")
    store.put("da/last_chunk_index.payments-00000.txt", data.encode())

    assert find_backups(store) == [Found("da", "deviantart")]
    (entry,) = catalogue(store)
    (payments,) = entry.partitions
    assert (entry.topics, entry.format, entry.envelope) == (["payments"], "Block-GZIP objects (.gz)", False)
    assert (payments.first_offset, payments.last_object_offset, payments.objects, payments.bytes) == (0, 0, 2, 22)
