"""What one listing of a backup's prefix tells ``kafka-s3 ls``/``info`` (issue 29 item 5): objects and bytes per
partition, offsets by name, manifests, committed marks, pruned starts, snapshot records."""

from __future__ import annotations

import pytest

from kafka_s3.core.catalogue import BackupListing, holds_manifests, looks_like_topic
from kafka_s3.core.store import ObjectInfo

MANIFESTS = "backups/_kafka-s3/json/orders"


def listing_of(*objects: tuple[str, int], root: str = "backups") -> BackupListing:
    listing = BackupListing(root)
    for key, size in objects:
        listing.add(ObjectInfo(key, size, last_modified=float(size)))
    return listing


@pytest.mark.issue(29, item=5)
def test_a_listing_counts_objects_and_bytes_and_reads_offsets_from_names_sidecars_included():
    listing = listing_of(
        ("backups/orders/partition=0/orders+0+0000000000.json", 100),
        ("backups/orders/partition=0/orders+0+0000000000.keys.json", 10),
        ("backups/orders/partition=0/orders+0+0000000003.json", 120),
        ("backups/orders/partition=1/orders+1+0000000007.json", 50),
        ("backups/README.txt", 5),  # not a backup's object
    )
    zero, one = listing.partitions["orders"][0], listing.partitions["orders"][1]
    assert (zero.objects, zero.bytes, zero.data_objects) == (3, 230, 2)
    assert (zero.first_name_offset, zero.last_name_offset, zero.newest_write) == (0, 3, 120.0)
    assert (one.first_name_offset, one.last_name_offset) == (7, 7)
    assert listing.extensions == {".json"}
    assert listing.examples[".json"].key == "backups/orders/partition=0/orders+0+0000000000.json"


@pytest.mark.issue(29, item=5)
def test_manifests_marks_and_the_pruned_start_tell_the_kept_and_the_unfinished_chunks():
    listing = listing_of(
        (f"{MANIFESTS}/0/{0:020d}.chunk", 1),  # below the pruned start: what an interrupted prune left
        (f"{MANIFESTS}/0/{0:020d}.pruned", 1),
        (f"{MANIFESTS}/0/{3:020d}.pruned", 2),
        (f"{MANIFESTS}/0/{3:020d}.chunk", 1),
        (f"{MANIFESTS}/0/{3:020d}.tail", 7),
        (f"{MANIFESTS}/0/{6:020d}.chunk", 1),  # beyond the newest mark: not committed yet
        (f"{MANIFESTS}/partition-count/2.count", 1),
    )
    held = listing.partitions["orders"][0]
    assert (held.pruned, held.pruned_at, held.newest_mark) == (3, 2.0, 7.0)
    assert held.kept_manifests() == [3, 6]
    assert held.unfinished() == [6]
    assert held.trees == {"json"} and listing.manifest_trees == {".json"}
    assert set(listing.partitions["orders"]) == {0}  # the partition-count record is no partition


@pytest.mark.issue(29, item=5)
def test_snapshot_records_are_listed_by_kind_and_time():
    listing = listing_of(
        (f"{MANIFESTS}/consumer-groups/{5:020d}.offsets", 1),
        (f"{MANIFESTS}/consumer-groups/{9:020d}.offsets", 1),
        (f"{MANIFESTS}/topic-config/{4:020d}.topicconfig", 1),
        (f"{MANIFESTS}/schemas/{6:020d}.schemas", 1),
    )
    assert listing.snapshots == {"orders": {"consumer_groups": [5, 9], "topic_configs": [4], "schemas": [6]}}


@pytest.mark.issue(29, item=5)
def test_lenses_names_give_partition_and_offset_from_their_directories():
    listing = listing_of(("lenses/orders/2/000000000042_1700000000000_1700000001000.json", 9), root="lenses")
    held = listing.partitions["orders"][2]
    assert (held.first_name_offset, held.objects, held.bytes) == (42, 1, 9)


@pytest.mark.issue(29, item=5)
def test_a_backup_root_is_told_by_its_metadata_directory_or_its_partition_directories():
    assert holds_manifests(["orders", "_kafka-s3"])
    assert not holds_manifests(["orders"])
    assert looks_like_topic(["partition=0", "partition=1"]) and looks_like_topic(["3"])
    assert not looks_like_topic(["2024-01-01", "topics"])
