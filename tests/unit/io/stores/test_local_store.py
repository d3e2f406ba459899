"""The local directory store: conditional create, atomic publication, metadata, listing, ranged reads."""

from __future__ import annotations

import json
import os
import threading

import pytest

from kafka_s3.core.errors import BucketNotFoundError, ObjectExistsError, StoreError
from kafka_s3.io.stores.spec import StoreSpec


def visible_files(directory):
    return sorted(p.relative_to(directory).as_posix() for p in directory.rglob("*") if not p.name.startswith("."))


def test_put_then_get_round_trips_bytes_and_reports_size(local_store):
    info = local_store.put("topics/t/partition=0/t+0+0000000000.bin", b"hello\n")

    assert info.key == "topics/t/partition=0/t+0+0000000000.bin"
    assert info.size == 6
    assert local_store.get("topics/t/partition=0/t+0+0000000000.bin") == b"hello\n"


def test_bucket_is_a_directory_under_the_root(local_store, tmp_path):
    local_store.put("a/b.bin", b"x")

    assert (tmp_path / "b" / "a" / "b.bin").read_bytes() == b"x"
    assert local_store.url == (tmp_path / "b").as_uri()


def test_second_create_of_a_key_raises_object_exists_and_keeps_the_first(local_store):
    local_store.put("k.bin", b"first")

    with pytest.raises(ObjectExistsError) as caught:
        local_store.put("k.bin", b"second")

    assert caught.value.object_key == "k.bin"
    assert local_store.get("k.bin") == b"first"


def test_racing_creates_of_one_key_have_exactly_one_winner(local_store, tmp_path):
    threads = 16
    ready = threading.Barrier(threads)
    outcomes: dict[int, str] = {}

    def race(index: int) -> None:
        upload = local_store.create("race.bin", metadata={"writer": str(index)})
        upload.write(f"writer {index}".encode())
        ready.wait()
        try:
            upload.commit()
            outcomes[index] = "won"
        except ObjectExistsError:
            outcomes[index] = "lost"

    workers = [threading.Thread(target=race, args=(i,)) for i in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()

    winners = [i for i, outcome in outcomes.items() if outcome == "won"]
    assert len(outcomes) == threads
    assert len(winners) == 1
    assert local_store.get("race.bin") == f"writer {winners[0]}".encode()
    assert local_store.head("race.bin").metadata == {"writer": str(winners[0])}
    assert visible_files(tmp_path / "b") == ["race.bin"]
    hidden = [name for name in os.listdir(tmp_path / "b") if name.startswith(".")]
    assert len(hidden) == 1  # only the winner's metadata sidecar; no temporary file and no loser's sidecar


def test_nothing_is_visible_before_commit(local_store):
    upload = local_store.create("pending.bin")
    upload.write(b"abc")

    assert local_store.head("pending.bin") is None
    assert list(local_store.list("")) == []

    upload.commit()
    assert local_store.head("pending.bin").size == 3


def test_abort_leaves_no_file_behind(local_store, tmp_path):
    upload = local_store.create("dir/aborted.bin", metadata={"a": "1"})
    upload.write(b"abc")
    upload.abort()
    upload.abort()  # twice is fine

    assert local_store.head("dir/aborted.bin") is None
    assert os.listdir(tmp_path / "b" / "dir") == []


def test_failed_commit_removes_the_temporary_file(local_store, tmp_path):
    local_store.put("taken.bin", b"1")
    upload = local_store.create("taken.bin")
    upload.write(b"2")

    with pytest.raises(ObjectExistsError):
        upload.commit()
    upload.abort()

    assert sorted(n for n in os.listdir(tmp_path / "b") if not n.startswith(".")) == ["taken.bin"]
    assert len([n for n in os.listdir(tmp_path / "b") if n.endswith(".tmp")]) == 0


def test_upload_counts_bytes_and_refuses_writes_after_commit(local_store):
    upload = local_store.create("counted.bin")
    assert upload.write(b"abc") == 3
    assert upload.write(memoryview(b"de")) == 2
    assert upload.bytes_written == upload.tell() == 5
    upload.commit()

    assert upload.closed
    with pytest.raises(ValueError):
        upload.write(b"more")


def test_metadata_is_visible_to_head_right_after_commit(local_store):
    local_store.create("m.bin", metadata={"schema-id": "7", "format": "avro"}, tags={"recordCount": "3"}).commit()

    info = local_store.head("m.bin")
    assert info.metadata == {"schema-id": "7", "format": "avro"}
    assert info.size == 0


def test_metadata_goes_away_with_the_object(local_store, tmp_path):
    local_store.create("gone.bin", metadata={"a": "1"}).commit()
    local_store.delete(["gone.bin", "never-existed.bin"])

    assert local_store.head("gone.bin") is None
    assert os.listdir(tmp_path / "b") == []


def test_head_of_a_missing_key_or_directory_is_none(local_store):
    local_store.put("d/x.bin", b"1")

    assert local_store.head("missing.bin") is None
    assert local_store.head("d") is None
    assert local_store.head("d/x.bin/deeper") is None


def test_listing_skips_temporary_and_hidden_files_and_uses_slashes(local_store, tmp_path):
    local_store.put("topics/t/partition=0/t+0+0000000000.bin", b"1")
    local_store.put("topics/t/partition=1/t+1+0000000000.bin", b"22")
    local_store.put("topics/t-2/partition=0/x.bin", b"333")
    pending = local_store.create("topics/t/partition=0/t+0+0000000005.bin")
    pending.write(b"not yet")
    (tmp_path / "b" / "topics" / ".DS_Store").write_bytes(b"")

    listed = {info.key: info.size for info in local_store.list("topics/t/")}

    assert listed == {"topics/t/partition=0/t+0+0000000000.bin": 1, "topics/t/partition=1/t+1+0000000000.bin": 2}
    pending.abort()


def test_listing_by_a_partial_name_prefix(local_store):
    for key in ("p/t+0+0000000000.bin", "p/t+0+0000000010.bin", "p/t+1+0000000000.bin", "p/u.bin", "p/t+0/x.bin"):
        local_store.put(key, b"")

    assert sorted(info.key for info in local_store.list("p/t+0+")) == ["p/t+0+0000000000.bin", "p/t+0+0000000010.bin"]
    assert sorted(info.key for info in local_store.list("p/t+0")) == [
        "p/t+0+0000000000.bin",
        "p/t+0+0000000010.bin",
        "p/t+0/x.bin",
    ]
    assert sorted(info.key for info in local_store.list("")) == [
        "p/t+0+0000000000.bin",
        "p/t+0+0000000010.bin",
        "p/t+0/x.bin",
        "p/t+1+0000000000.bin",
        "p/u.bin",
    ]
    assert list(local_store.list("nothing/here/")) == []
    assert list(local_store.list("p/t+0+0000000000.bin/")) == []


def test_ranged_get_is_inclusive(local_store):
    local_store.put("r.bin", b"0123456789")

    assert local_store.get("r.bin", 2, 4) == b"234"
    assert local_store.get("r.bin", 7) == b"789"
    assert local_store.get("r.bin", 0, 0) == b"0"
    assert local_store.get("r.bin", 8, 100) == b"89"
    with pytest.raises(StoreError, match="past the end"):
        local_store.get("r.bin", 10, 12)


def test_open_returns_a_seekable_file(local_store):
    local_store.put("s.bin", b"0123456789")

    with local_store.open("s.bin") as file:
        file.seek(-3, os.SEEK_END)
        assert file.read() == b"789"
        file.seek(1)
        assert file.read(2) == b"12"


def test_reading_a_missing_object_names_it(local_store):
    with pytest.raises(StoreError, match="missing.bin: no such object"):
        local_store.get("missing.bin")
    with pytest.raises(StoreError, match="missing.bin: no such object"):
        local_store.open("missing.bin")


@pytest.mark.parametrize("key", ["", "/abs.bin", "a//b.bin", "../escape.bin", "a/./b.bin", "a/..", "%2Eb/c.bin"])
def test_keys_that_would_escape_or_hide_are_refused(local_store, key):
    with pytest.raises(StoreError, match="invalid object key"):
        local_store.create(key)


@pytest.mark.issue(15, item=6)
def test_keys_with_segments_starting_with_a_dot_are_stored_apart_from_hidden_files(local_store, tmp_path):
    """Lenses' lock objects (``.indexes/<connector>/.locks/<topic>/<partition>.lock``) are ordinary S3 keys: the
    local store holds them too, escaped on disk so they never meet its own hidden temporary and metadata files."""
    key = ".indexes/sink/.locks/t/0.lock"
    local_store.put(key, b"{}")
    local_store.put(".hidden.bin", b"h")
    assert local_store.get(key) == b"{}" and local_store.head(key).size == 2
    assert sorted(i.key for i in local_store.list("")) == [".hidden.bin", key]
    assert [i.key for i in local_store.list(".indexes/sink/.lo")] == [key]
    assert local_store.children("") == [".indexes"]
    assert (tmp_path / "b" / "%2Eindexes" / "sink" / "%2Elocks" / "t" / "0.lock").read_bytes() == b"{}"
    local_store.delete([key])
    assert local_store.head(key) is None


def test_missing_bucket_directory_is_reported_with_the_command_that_creates_it(tmp_path, sink_config):
    store = StoreSpec.from_config(sink_config({"store.url": tmp_path.as_uri()}), environ={}).open()

    operations = (
        store.check,
        lambda: store.create("k.bin"),
        lambda: list(store.list("")),
        lambda: store.get("k.bin"),
        lambda: store.delete(["k.bin"]),
    )
    for operation in operations:
        with pytest.raises(BucketNotFoundError) as caught:
            operation()
        assert str(caught.value) == (
            f"bucket 'b' does not exist at {tmp_path.as_uri()}; buckets are never created implicitly: "
            "run `kafka-s3 bucket create b`"
        )
    assert not (tmp_path / "b").exists()

    store.create_bucket()
    store.check()


def test_a_key_below_an_existing_object_is_a_store_error(local_store):
    local_store.put("a", b"file")

    with pytest.raises(StoreError, match="create .*a/b.bin failed"):
        local_store.create("a/b.bin")


def sidecar_of(directory, name: str) -> dict:
    (sidecar,) = [p for p in directory.iterdir() if p.name.startswith(f".{name}.") and p.name.endswith(".meta.json")]
    return json.loads(sidecar.read_text())


def test_tags_given_at_creation_and_replaced_after_commit_keep_the_metadata(local_store, tmp_path):
    local_store.create("t.bin", metadata={"a": "1"}, tags={"startOffset": "0"}).commit()

    local_store.put_tags("t.bin", {"startOffset": "0", "endOffset": "9", "recordCount": "10"})

    assert sidecar_of(tmp_path / "b", "t.bin") == {
        "metadata": {"a": "1"},
        "tags": {"startOffset": "0", "endOffset": "9", "recordCount": "10"},
    }
    assert local_store.head("t.bin").metadata == {"a": "1"}
    assert [n for n in os.listdir(tmp_path / "b") if n.endswith(".tmp")] == []


def test_tagging_a_missing_object_names_it(local_store):
    with pytest.raises(StoreError, match="put_tags .*missing.bin: no such object"):
        local_store.put_tags("missing.bin", {"a": "1"})
