"""The commit protocol of one partition's chunks: manifest first, files next, then the committed-end mark.

A chunk's manifest is created conditionally before its files complete: it is the commit intent, so a crash at any
point followed by a re-run converges on the same objects (a re-run replays the manifest's cut). Files complete in
the background while the next chunk is written (at most :data:`MAX_PENDING_COMMITS` chunks at once);
:meth:`ChunkCommitter.settle` waits for them before anything is reported as committed. An object already under a
chunk's key is this chunk's only when it is provably so (its size; a shorter one a write of this very chunk cut
short): anything else is refused, never deleted. Peers' cursor and lock objects move with the newest chunk.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

from kafka_s3.core.errors import KafkaS3Error, ObjectExistsError, SourceChanged
from kafka_s3.core.manifest import FileEntry, Manifest, ManifestStore
from kafka_s3.core.store import Store, Upload
from kafka_s3.pipelines.backup.files import OpenFile, ambiguous
from kafka_s3.pipelines.backup.plugins import BackupPlugins

log = logging.getLogger("kafka_s3.pipelines.backup.partition")

MAX_PENDING_COMMITS = 2  # chunks whose files complete in the background while the next chunk is written


class ChunkConflict(KafkaS3Error):
    """The bucket already holds a different cut of these offsets; the existing manifest wins."""

    def __init__(self, existing: Manifest):
        super().__init__(
            f"{existing.topic}[{existing.partition}]: the bucket already has a chunk of offsets "
            f"{existing.start}..{existing.end}; re-creating it as it is"
        )
        self.existing = existing


class ChunkCommitter:
    """Commits one topic-partition's chunks (``previous``: as :class:`~.partition.PartitionBackup` takes it)."""

    def __init__(
        self,
        plugins: BackupPlugins,
        store: Store,
        topic: str,
        partition: int,
        manifests: ManifestStore,
        topic_id: str = "",
        previous: tuple[int | None] | None = None,
    ):
        self.plugins = plugins
        self.store = store
        self.topic = topic
        self.partition = partition
        self.manifests = manifests
        self.topic_id = topic_id
        self.committed: list[Manifest] = []
        # End offset of the chunk before the next one (its manifest's ``follows``): looked up in the bucket at the
        # first chunk, then the chunk committed last.
        self._previous_end: int | None = previous[0] if previous is not None else None
        self._previous_known = previous is not None
        self.replayed_files = 0  # files of replayed chunks found in the bucket already
        self._committer: ThreadPoolExecutor | None = None
        self._pending: list[Future[int]] = []
        self._cursor_lock = threading.Lock()
        self._cursor_offset = -1  # first offset of the chunk the cursor object points at (this run)
        self._lock_offset = -1  # committed offset the lock object holds (this run)
        # Told of each chunk once all its files are complete (the task tells the driver, which logs them then)
        self.on_stored: Callable[[Manifest], None] | None = None

    @property
    def where(self) -> str:
        return f"{self.topic}[{self.partition}]"

    def commit(
        self, files: list[OpenFile], replaying: Manifest | None, first_record: str | None, last_record: str | None
    ) -> None:
        """Commit a closed chunk: its manifest created (the commit intent; a replayed chunk keeps the bucket's), then
        its files completed in the background. ``first_record``/``last_record``: digests of its first and last
        record, recorded in the manifest (and compared with a replayed chunk's)."""
        entries = []
        for f in files:
            if f.tombstones is None:
                size = f.upload.bytes_written if f.upload is not None else self._existing_size(replaying, f.key)
                entries.append(
                    FileEntry(
                        f.key,
                        "data",
                        f.records,
                        f.first_offset,
                        f.last_offset,
                        size,
                        f.directory,
                        ambiguous(f.writer),
                        f.first_timestamp,
                        f.last_timestamp,
                    )
                )
            offsets = tuple(f.tombstones) if f.tombstones is not None else None
            for s in f.sidecars:
                entries.append(
                    FileEntry(
                        s.key,
                        s.kind,
                        f.records,
                        f.first_offset,
                        f.last_offset,
                        s.upload.bytes_written,
                        f.directory,
                        ambiguous(s.writer),
                        offsets=offsets,
                    )
                )
        start = min(f.first_offset for f in files)
        manifest = Manifest(
            self.topic,
            self.partition,
            start=start,
            end=max(f.last_offset for f in files),
            files=tuple(entries),
            follows=self.follows(start) if replaying is None else replaying.follows,
            source_topic_id=self.topic_id or None,
            first_record=first_record,
            last_record=last_record,
        )
        if replaying is not None:
            stored = replaying
            if replaying.end == manifest.end:
                self.same_record(replaying, replaying.end, replaying.last_record, last_record)
            if not stored.same_cut(manifest):
                log.warning(
                    "%s: re-created chunk %d..%d ends at %d now (records removed from Kafka since?); keeping the "
                    "bucket's objects",
                    self.where,
                    stored.start,
                    stored.end,
                    manifest.end,
                )
        else:
            stored = self.manifests.create(manifest)
            if not stored.same_cut(manifest):
                for f in files:
                    f.abort()
                raise ChunkConflict(stored)
        # The manifest is durable: completing the files (last part upload, CompleteMultipartUpload) can overlap with
        # reading and encoding the next chunk. finish() waits for them before anything is reported as committed.
        self.reap(keep=MAX_PENDING_COMMITS - 1)
        if self._committer is None:
            self._committer = ThreadPoolExecutor(max_workers=2, thread_name_prefix="commit")
        self._pending.append(self._committer.submit(self._commit_files, files, stored))
        self.committed.append(stored)
        self._previous_end, self._previous_known = stored.end, True

    def follows(self, start: int) -> int | None:
        """End of the chunk the bucket holds before ``start`` (None: this is the backup's first chunk). The same on a
        replay: the chunks before it are the same manifests (created once, never replaced)."""
        if not self._previous_known:
            earlier = [s for s in self.manifests.starts(self.topic, self.partition) if s < start]
            previous = self.manifests.get(self.topic, self.partition, earlier[-1]) if earlier else None
            self._previous_end, self._previous_known = (previous.end if previous else None), True
        return self._previous_end

    def same_record(self, manifest: Manifest, offset: int, recorded: str | None, found: str | None) -> None:
        if recorded is None or found is None or recorded == found:
            return
        raise SourceChanged(
            f"{self.where}: the record at offset {offset} is not the one backed up in chunk "
            f"{manifest.start}..{manifest.end} ({self.manifests.key(self.topic, self.partition, manifest.start)}): "
            f"this is not the log the bucket holds (the topic was deleted and re-created, or this is another "
            f"cluster's topic of the same name). Nothing of it was written; back this log up under another "
            f"topics.dir (or bucket), or remove the old backup first"
        )

    def _commit_files(self, files: list[OpenFile], chunk: Manifest) -> int:
        """Complete a chunk's uploads, sidecars before their data object; returns how many were already stored.
        ``on_stored`` hears of ``chunk`` then."""
        existing = 0
        for f in files:
            for upload in [s.upload for s in f.sidecars] + [f.upload]:
                if upload is None:
                    continue
                try:
                    upload.commit()
                except ObjectExistsError:
                    # Same manifest, same records: the object there is byte-identical (deterministic writers) —
                    # unless it is not this chunk's at all: a PUT cut short when a run was killed can leave a stub.
                    self._check_existing(upload)
                    existing += 1
            if self.plugins.tagging and f.upload is not None:
                self._tag(f)
        self._move_cursor(files)
        self._move_lock(files)
        if self.on_stored is not None:
            self.on_stored(chunk)
        return existing

    def stored_whole(self, key: str, replaying: Manifest) -> bool:
        """Whether a replayed chunk's object is in the bucket as its manifest recorded it. One smaller than that is a
        write of this chunk cut short (a PUT interrupted when a run was killed can leave a stub) when the chunk's
        first record is the one the manifest recorded (checked before this): it is removed, and the chunk's records
        write it again. Anything else under the key is not provably this chunk's: refused, never deleted."""
        info = self.store.head(key)
        if info is None:
            return False
        recorded = next((e.bytes for e in replaying.files if e.key == key), None)
        if recorded is None or info.size == recorded:
            return True
        if info.size > recorded or replaying.first_record is None:
            raise SourceChanged(
                f"{self.store.url}/{key}: holds {info.size} bytes where the chunk's manifest "
                f"({self.manifests.key(self.topic, self.partition, replaying.start)}) recorded {recorded}: not an "
                "object this backup can prove it wrote; left as it is. Move it away (or back up under another "
                "topics.dir) and run again"
            )
        log.warning(
            "%s/%s: held %d bytes where the chunk's manifest recorded %d (a write of this chunk cut short when a run "
            "was stopped): written again",
            self.store.url,
            key,
            info.size,
            recorded,
        )
        self.store.delete([key])
        return False

    def _check_existing(self, upload: Upload) -> None:
        """An object already under a chunk's key must have the size this chunk's object has (deterministic writers:
        then it is the same object). One that does not is not this backup's: the chunk fails, naming it, and the
        object is left as it is (never deleted: nothing proves it is a write of these records)."""
        stored = self.store.head(upload.key)
        if stored is None or stored.size == upload.bytes_written:
            return
        raise SourceChanged(
            f"{self.store.url}/{upload.key}: holds {stored.size} bytes where this chunk's object has "
            f"{upload.bytes_written} bytes: not an object of this chunk; left as it is. Move it away (or back up "
            "under another topics.dir) and run again"
        )

    def _move_cursor(self, files: list[OpenFile]) -> None:
        """A layout with a cursor object (DeviantArt's ``last_chunk_index.<topic>-<p>.txt``, DA
        ``S3Writer.updateCursorFile``) points it at the newest chunk's index once that chunk is stored; chunks
        committing concurrently never move it back."""
        newest = max(files, key=lambda f: f.first_offset)
        index = next((side.key for side in newest.sidecars if side.kind == "index"), None)
        if index is None:
            return
        with self._cursor_lock:
            if newest.first_offset > self._cursor_offset:
                key = self.plugins.layout.cursor_key(self.topic, self.partition)
                if key is None:
                    return
                # Stores create conditionally only: the cursor is replaced (DeviantArt's task reads it at start).
                self.store.delete([key])
                with contextlib.suppress(ObjectExistsError):  # another run put it back meanwhile: as new as ours
                    self.store.put(key, index.encode())
                self._cursor_offset = newest.first_offset

    def _move_lock(self, files: list[OpenFile]) -> None:
        """A layout with a lock object per topic-partition (Lenses' ``.indexes/<connector>/.locks/<topic>/<p>.lock``,
        LS ``seek/IndexManagerV2``) has it hold the newest committed offset once the chunk is stored."""
        last = max(f.last_offset for f in files)
        with self._cursor_lock:
            if last > self._lock_offset:
                lock = self.plugins.layout.lock_object(self.plugins.config["name"], self.topic, self.partition, last)
                if lock is None:
                    return
                key, body = lock
                # Stores create conditionally only: the lock is replaced, as the DeviantArt cursor is.
                self.store.delete([key])
                with contextlib.suppress(ObjectExistsError):  # another run put it back meanwhile
                    self.store.put(key, body)
                self._lock_offset = last

    def reap(self, keep: int = 0) -> None:
        """Wait until at most ``keep`` chunk commits are in flight; a failed commit raises here."""
        while len(self._pending) > keep:
            self.replayed_files += self._pending.pop(0).result()

    def _existing_size(self, manifest: Manifest | None, key: str) -> int:
        if manifest is not None:
            for entry in manifest.files:
                if entry.key == key:
                    return entry.bytes
        info = self.store.head(key)
        return info.size if info else 0

    def _tag(self, f: OpenFile) -> None:
        tags = {"startOffset": str(f.first_offset), "endOffset": str(f.last_offset), "recordCount": str(f.records)}
        tags.update(self.plugins.extra_tags)
        self.store.put_tags(f.key, tags)

    def wait(self) -> None:
        """Let the background commits settle, whatever their outcome (a failure surfaces in :meth:`settle`, or the
        task is failing already)."""
        for future in self._pending:
            future.exception()

    def settle(self) -> None:
        """Wait for the chunks completing in the background and raise the first failure: a chunk whose files did
        not complete is not durable, so nothing after it may be reported as committed."""
        try:
            self.reap()
        finally:
            self._pending.clear()
            if self._committer is not None:
                self._committer.shutdown()
                self._committer = None
