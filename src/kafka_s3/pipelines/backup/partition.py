"""Backing up one topic-partition: ordered record batches in, committed chunks of objects out.

This is Confluent's TopicPartitionWriter re-thought for Arrow batches: converters, the partitioner and the rotation
rules run on whole batches; rows are grouped per encoded partition and streamed to the format writers, which write
straight into conditional uploads. A chunk commits as manifest-then-files (see :mod:`kafka_s3.core.manifest`), so a
crash at any point followed by a re-run converges on the same objects.

Over 500 lines on purpose: the write path (rows into open files) and the commit path (open files into a durable
chunk) share the open-file state of one partition; plugin wiring and value fitting live apart
(:mod:`.plugins`, :mod:`.values`).
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import BinaryIO, SupportsInt, cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kafka_s3.core.converters.base import Converted, Converter, Logical, ValueSchema
from kafka_s3.core.converters.json import NULL_VALUES
from kafka_s3.core.errors import ConversionError, DataError, KafkaS3Error, ObjectExistsError, SourceChanged
from kafka_s3.core.formats.base import FileContext, Format, FormatWriter
from kafka_s3.core.layout import Kind
from kafka_s3.core.manifest import OBJECT_METADATA, FileEntry, Manifest, ManifestStore
from kafka_s3.core.records import record_checksum, timestamps_ms
from kafka_s3.core.rotation import Rotator
from kafka_s3.core.schema_evolution import Compatibility, SchemaJudge
from kafka_s3.core.store import Store, Upload
from kafka_s3.pipelines.backup.plugins import BackupPlugins
from kafka_s3.pipelines.backup.result import OpenChunk, PartitionResult
from kafka_s3.pipelines.backup.staging import StagedUpload
from kafka_s3.pipelines.backup.values import Values

log = logging.getLogger(__name__)

MAX_PENDING_COMMITS = 2  # chunks whose files complete in the background while the next chunk is written


class ChunkConflict(KafkaS3Error):
    """The bucket already holds a different cut of these offsets; the existing manifest wins."""

    def __init__(self, existing: Manifest):
        super().__init__(
            f"{existing.topic}[{existing.partition}]: the bucket already has a chunk of offsets "
            f"{existing.start}..{existing.end}; re-creating it as it is"
        )
        self.existing = existing


# ------------------------------------------------------------------------------------------------ open files
@dataclass
class Sidecar:
    kind: str
    key: str
    upload: Upload
    writer: FormatWriter | None  # None for an index sidecar, whose bytes come whole from the data writer


@dataclass
class OpenFile:
    """One object being written for an encoded partition of the open chunk."""

    encoded: str
    key: str
    directory: str
    first_offset: int
    last_offset: int = -1
    records: int = 0
    first_timestamp: int | None = None  # earliest record time (ms), None while no record has one
    last_timestamp: int | None = None
    upload: Upload | None = None  # None when the object is already in the bucket (replayed chunk)
    writer: FormatWriter | None = None
    schema: ValueSchema | None = None  # of its first non-null value: values of other schemas are projected to it
    sidecars: list[Sidecar] = field(default_factory=list)
    untimed: bool = False  # holds a record without a timestamp (Lenses' names then give -1 as the smallest)
    # behavior.on.null.values=write: tombstones only, kept as keys and headers sidecars without a value object (CS
    # format/KeyValueHeaderRecordWriterProvider.getRecordWriter); their offsets go into the chunk manifest
    tombstones: list[int] | None = None

    def abort(self) -> None:
        for upload in [self.upload] + [s.upload for s in self.sidecars]:
            if upload is not None:
                try:
                    upload.abort()
                except Exception:  # aborting is best effort: an abandoned multipart upload only costs storage
                    log.warning("could not abort the upload of %s", self.key, exc_info=True)
        for writer in [self.writer] + [s.writer for s in self.sidecars]:
            if writer is not None:
                with contextlib.suppress(Exception):  # nothing of it is kept either way
                    writer.discard()


def _ambiguous(writer: FormatWriter | None) -> int:
    """Records of a closed object that cannot be read back one by one (none for an object replayed from the bucket,
    whose chunk manifest is kept as it is)."""
    return writer.ambiguous() if writer is not None else 0


def _record_sizes(batch: pa.RecordBatch) -> np.ndarray:
    """Bytes of key + value + header keys/values per record (what rotate.size.bytes counts)."""
    sizes: np.ndarray = (
        pc.fill_null(pc.binary_length(batch.column("key")), 0).to_numpy(zero_copy_only=False).astype(np.int64)
    )
    sizes += pc.fill_null(pc.binary_length(batch.column("value")), 0).to_numpy(zero_copy_only=False)
    headers = batch.column("headers")
    counts = pc.fill_null(pc.list_value_length(headers), 0).to_numpy(zero_copy_only=False)
    if counts.any():
        flat = pc.list_flatten(headers)
        per_header = pc.fill_null(pc.binary_length(flat.field("key").cast(pa.binary())), 0).to_numpy(
            zero_copy_only=False
        ) + pc.fill_null(pc.binary_length(flat.field("value")), 0).to_numpy(zero_copy_only=False)
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
        summed = np.add.reduceat(per_header, np.minimum(starts, max(len(per_header) - 1, 0))) if len(per_header) else 0
        sizes += np.where(counts > 0, summed, 0)
    return sizes


class PartitionBackup:
    """Writes one topic-partition's records into chunks of objects, following the rotation rules.

    ``forced_end``: the first chunk must end exactly at that offset (re-creating a chunk the bucket already has).
    ``recover``: look for existing manifests at each new chunk until one is missing (after a crash, the committed
    chunks form a prefix of what this run will write; replaying them skips the uploads already done).
    ``open_since_ms`` / ``open_until``: the first chunk was left open by an earlier cycle, first seen open at that
    wall time and holding the records below ``open_until`` (for ``rotate.schedule.interval.ms``).
    ``previous``: ``(end,)`` of the chunk committed before the first one (``(None,)``: none), when the caller knows
    it; else it is looked up in the bucket at the first new chunk.
    ``topic_id``: the source topic's id ("" where the broker gives none), recorded in each manifest; a replayed
    chunk's first and last records must be those its manifest recorded (:class:`SourceChanged` otherwise).
    """

    def __init__(
        self,
        plugins: BackupPlugins,
        store: Store,
        topic: str,
        partition: int,
        *,
        forced_end: int | None = None,
        recover: bool = True,
        clock: Callable[[], float] = time.time,
        open_since_ms: int | None = None,
        open_until: int | None = None,
        previous: tuple[int | None] | None = None,
        topic_id: str = "",
    ):
        self.plugins = plugins
        self.topic_id = topic_id
        self.store = store
        self.topic = topic
        self.partition = partition
        self.clock = clock
        self.manifests = ManifestStore(store, plugins.manifest_root, plugins.layout.directory_delim)
        self.recovering = recover
        self.replaying: Manifest | None = None
        self.judge = SchemaJudge(plugins.compatibility)
        self.rotator = Rotator(
            plugins.policy,
            forced_end,
            on_open=self._on_chunk_open,
            opened_at_ms=open_since_ms,
            open_until=open_until,
            schema_rolls=self.judge.rolls,
        )
        self.open: dict[str, OpenFile] = {}
        self.chunk_start: int | None = None
        self.chunk_first_timestamp: int | None = None
        # digests of the open chunk's first and last record (record_checksum): what the manifest records
        self.chunk_first_record: str | None = None
        self.chunk_last_record: str | None = None
        self.committed: list[Manifest] = []
        # End offset of the chunk before the next one (its manifest's ``follows``): looked up in the bucket at this
        # writer's first chunk, then the chunk it committed last.
        self._previous_end: int | None = previous[0] if previous is not None else None
        self._previous_known = previous is not None
        self.records_in = 0
        self.replayed_files = 0
        self._replays: dict[int, Manifest] = {}  # chunk start -> manifest found by the rotator's hook
        self._committer: ThreadPoolExecutor | None = None
        self._pending: list[Future[int]] = []
        self._cursor_lock = threading.Lock()
        self._cursor_offset = -1  # first offset of the chunk the cursor object points at (this run)
        self._lock_offset = -1  # committed offset the lock object holds (this run)

    @property
    def where(self) -> str:
        return f"{self.topic}[{self.partition}]"

    def records_until_flush(self) -> int | None:
        """Records the open chunk takes at most before ``flush.size`` closes it (None with no chunk open)."""
        if not self.open:
            return None
        return max(1, self.plugins.policy.flush_size - max(f.records for f in self.open.values()))

    # ------------------------------------------------------------------------------------------------ input
    def write(self, batch: pa.RecordBatch) -> None:
        if batch.num_rows == 0:
            return
        plugins = self.plugins
        self.records_in += batch.num_rows
        now_ms = int(self.clock() * 1000)
        if not plugins.envelope:
            batch = self._handle_nulls(batch)
            if batch.num_rows == 0:
                return
        offsets = batch.column("offset").to_numpy()
        values = Values(
            self._convert(plugins.value_converter, batch, "value") if plugins.needs_values else None, batch.num_rows
        )
        keys = Values(
            self._convert(plugins.key_converter, batch, "key") if plugins.keys_format is not None else None,
            batch.num_rows,
        )
        encoded = self._encode(batch, values, now_ms)
        timestamps = (
            values.timestamps_with(plugins.partitioner, batch, now_ms)
            if plugins.policy.rotate_interval_ms > 0
            else None
        )
        dictionary_array = pc.dictionary_encode(encoded)
        codes = dictionary_array.indices.to_numpy(zero_copy_only=False)
        dictionary = dictionary_array.dictionary.to_pylist()
        sizes = _record_sizes(batch) if plugins.policy.rotate_size_bytes > 0 else np.zeros(0, dtype=np.int64)
        schema_codes, schema_names = values.run_codes()
        by_format = plugins.value_format.row_schemas(batch) if plugins.envelope else None
        if by_format is not None:  # envelope objects whose schema follows each record (Lenses' Avro/Parquet)
            schema_codes, schema_names = by_format
        if values.converted is not None and self.judge.mode is not Compatibility.NONE:
            for _, run in values.converted.runs:
                self.judge.learn(run.schema)
        try:
            segments = self.rotator.split(
                offsets, codes, dictionary, timestamps, sizes, schema_codes, schema_names, now_ms
            )
        except ConversionError as exc:  # schemas that schema.compatibility cannot compare (no versions)
            offset = offsets[exc.row] if exc.row is not None else "?"
            raise ConversionError(f"{self.where} offset {offset}: {exc}") from None
        for segment in segments:
            if segment.opened is not None:
                self.chunk_start = segment.opened
                self.replaying = self._replays.pop(segment.opened, None)
            if segment.end > segment.start:
                self._note_records(batch, offsets, segment.start, segment.end)
                self._write_rows(batch, values, keys, offsets, codes, dictionary, segment.start, segment.end)
            if segment.close:
                self._commit_chunk()

    def _note_records(self, batch: pa.RecordBatch, offsets: np.ndarray, start: int, stop: int) -> None:
        """Keep the digests of the open chunk's first and last record. A replayed chunk's first record must be the
        one its manifest recorded, checked before anything of it is written: another log under the same name (the
        topic re-created, another cluster) is refused, never mixed into the backup."""
        if self.chunk_first_record is None:
            self.chunk_first_record = record_checksum(batch, start)
            replaying = self.replaying
            if replaying is not None and int(offsets[start]) == replaying.start:
                self._same_record(replaying, replaying.start, replaying.first_record, self.chunk_first_record)
        self.chunk_last_record = record_checksum(batch, stop - 1)

    def _same_record(self, manifest: Manifest, offset: int, recorded: str | None, found: str | None) -> None:
        if recorded is None or found is None or recorded == found:
            return
        raise SourceChanged(
            f"{self.where}: the record at offset {offset} is not the one backed up in chunk "
            f"{manifest.start}..{manifest.end} ({self.manifests.key(self.topic, self.partition, manifest.start)}): "
            f"this is not the log the bucket holds (the topic was deleted and re-created, or this is another "
            f"cluster's topic of the same name). Nothing of it was written; back this log up under another "
            f"topics.dir (or bucket), or remove the old backup first"
        )

    def _encode(self, batch: pa.RecordBatch, values: Values, now_ms: int) -> pa.Array:
        """Encoded partitions; null values go to the tombstone directory (Confluent's ``tombstone.encoded.partition``):
        always under behavior.on.null.values=write (CS ``util/TombstoneSupportedPartitioner.encodePartition``), and
        in envelope mode when the partitioner needs values."""
        partitioner = self.plugins.partitioner
        nulls = batch.column("value").is_null()
        if not (partitioner.uses_values or self._writes_tombstones) or not pc.any(nulls).as_py():
            return values.encode_with(partitioner, batch, now_ms)
        present = np.flatnonzero(~nulls.to_numpy(zero_copy_only=False))
        out = np.full(batch.num_rows, self.plugins.tombstone_partition, dtype=object)
        if len(present):
            subset = Values(values.converted_take(present), len(present))
            out[present] = subset.encode_with(partitioner, batch.take(pa.array(present)), now_ms).to_numpy(
                zero_copy_only=False
            )
        return pa.array(out, pa.string())

    @property
    def _writes_tombstones(self) -> bool:
        """Tombstones kept as Confluent keeps them: keys and headers only, in the tombstone directory."""
        return not self.plugins.envelope and self.plugins.null_behavior == "write"

    def _handle_nulls(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        nulls = batch.column("value").is_null()
        if not pc.any(nulls).as_py():
            return batch
        behavior = self.plugins.null_behavior
        if behavior == "fail":
            row = pc.index(nulls, True).as_py()
            first = batch.column("offset")[row].as_py()
            if row:
                # The records before it are backed up as usual (chunks they fill commit), whatever the batching.
                self.records_in -= row  # counted again by the nested write
                self.write(batch.slice(0, row))
            raise DataError(
                f"{self.where} offset {first}: null value (tombstone) with behavior.on.null.values=fail; set "
                "behavior.on.null.values=ignore or write, or store.envelope=true to keep tombstones"
            )
        if behavior == "ignore":
            return batch.filter(pc.invert(nulls))
        return batch

    def _convert(self, converter: Converter, batch: pa.RecordBatch, column: str) -> Converted:
        try:
            return converter.to_logical(self.topic, batch.column(column))
        except ConversionError as exc:
            offset = batch.column("offset")[exc.row].as_py() if exc.row is not None else "?"
            raise ConversionError(f"{self.where} offset {offset}: cannot convert the record {column}: {exc}") from None

    def _on_chunk_open(self, first_offset: int) -> int | None:
        """Rotator hook, called while a batch is split (before its rows are written): a chunk the bucket already has
        is replayed exactly; the writer switches to it when it reaches that chunk's first segment."""
        if not self.recovering:
            return None
        existing = self.manifests.get(self.topic, self.partition, first_offset)
        if existing is None:
            self.recovering = False
            return None
        self._replays[first_offset] = existing
        return existing.end

    def _write_rows(
        self,
        batch: pa.RecordBatch,
        values: Values,
        keys: Values,
        offsets: np.ndarray,
        codes: np.ndarray,
        dictionary: list[str],
        start: int,
        stop: int,
    ) -> None:
        if self.chunk_start is None:
            self.chunk_start = int(offsets[start])
        if self.chunk_first_timestamp is None:
            ts = batch.column("timestamp")[start].value
            self.chunk_first_timestamp = None if ts is None else ts // 1000
        segment_codes = codes[start:stop]
        if segment_codes.min() == segment_codes.max():
            encoded = dictionary[segment_codes[0]]
            target = self._target(encoded, values, start, stop)
            self._append(
                encoded,
                batch.slice(start, stop - start),
                values.slice(start, stop, target),
                keys.slice(start, stop),
                offsets[start],
                offsets[stop - 1],
                stop - start,
                target,
            )
            return
        order = np.argsort(segment_codes, kind="stable")
        sorted_codes = segment_codes[order]
        bounds = np.flatnonzero(np.diff(sorted_codes)) + 1
        groups = np.split(order, bounds)
        # Open files in order of each encoded partition's first record, as Confluent does.
        groups.sort(key=lambda g: g[0])
        for group in groups:
            rows = group + start
            taken = pa.array(rows)
            encoded = dictionary[segment_codes[group[0]]]
            target = self._target(encoded, values, rows[0], rows[-1] + 1, rows)
            self._append(
                encoded,
                batch.take(taken),
                values.take(rows, target),
                keys.take(rows),
                offsets[rows[0]],
                offsets[rows[-1]],
                len(rows),
                target,
            )

    def _target(
        self, encoded: str, values: Values, start: int, stop: int, rows: np.ndarray | None = None
    ) -> ValueSchema | None:
        """The schema the rows' values are written with: their file's (the schema of its first non-null value, as
        the rotator judges schemas), ``NULL_VALUES`` while the file has only nulls, ``None`` for untyped values."""
        if values.converted is None:
            return None
        single = values.single
        if single is not None and single.schema is None:
            return None  # raw bytes, text, schemaless JSON: nothing to fit (the hot path of untyped backups)
        file = self.open.get(encoded)
        if file is not None and file.schema is not None:
            return file.schema
        if (
            single is not None
            and single.schema is not None  # always true here (returned above when None): narrows the type
            and single.schema.avro != "null"
            and single.array.null_count == 0
        ):
            return single.schema  # one schema, no nulls
        if all(v.schema is None for _, v in values.converted.runs):
            return None
        schema = values.first_value_schema(np.arange(start, stop) if rows is None else rows)
        return NULL_VALUES if schema is None else schema

    def _append(
        self,
        encoded: str,
        records: pa.RecordBatch,
        values: Logical | None,
        keys: Logical | None,
        first: SupportsInt,  # an offset, often a numpy integer
        last: SupportsInt,
        count: int,
        target: ValueSchema | None = None,
    ) -> None:
        file = self.open.get(encoded)
        if file is None:
            file = self._open_file(encoded, int(first))
            self.open[encoded] = file
        if file.schema is None and target is not None and target.avro != "null":
            file.schema = target
        file.records += count
        file.last_offset = int(last)
        low, high = (m.as_py() for m in pc.min_max(timestamps_ms(records)).values())
        file.untimed = file.untimed or records.column("timestamp").null_count > 0
        if low is not None:
            file.first_timestamp = low if file.first_timestamp is None else min(file.first_timestamp, low)
            file.last_timestamp = high if file.last_timestamp is None else max(file.last_timestamp, high)
        if file.tombstones is not None:
            file.tombstones.extend(records.column("offset").to_pylist())
        elif file.writer is None:
            return  # already in the bucket
        else:
            file.writer.write(records, None if self.plugins.envelope else values)
        for sidecar in file.sidecars:  # keys and headers only: the index sidecar (no writer) is added at commit
            cast(FormatWriter, sidecar.writer).write(records, keys if sidecar.kind == "keys" else None)

    def _open_file(self, encoded: str, first_offset: int) -> OpenFile:
        plugins = self.plugins
        if plugins.names_at_close:
            return self._open_staged(encoded, first_offset)
        directory = plugins.partitioner.path(self.topic, encoded)
        key = plugins.layout.object_key(
            directory, self.topic, self.partition, first_offset, plugins.value_format.extension
        )
        if self.replaying is not None and getattr(plugins.layout, "dated_by_upload", False):
            # A name holding the upload date (DeviantArt's) is the one the chunk's manifest recorded.
            name = key.rsplit(plugins.layout.directory_delim, 1)[-1]
            key = next((e.key for e in self.replaying.files if e.kind == "data" and e.key.endswith("/" + name)), key)
        file = OpenFile(encoded, key, directory, first_offset)
        tombstones = self._writes_tombstones and encoded == plugins.tombstone_partition
        if tombstones:
            file.tombstones = []
        # a tombstone file has no value object: its keys sidecar stands for it
        stored = key if not tombstones else self._sidecar_key(key, "keys")
        if self.replaying is not None and self._stored_whole(stored):
            self.replayed_files += 1
            file.tombstones = None
            return file
        if not tombstones:
            ctx = FileContext(self.topic, self.partition, first_offset, key)
            file.upload = self.store.create(key, self._object_metadata())
            # an Upload is the binary file format writers write to (typed BinaryIO in the Format contract)
            file.writer = plugins.value_format.writer(cast(BinaryIO, file.upload), ctx)
        sidecar_formats: tuple[tuple[Kind, Format | None], ...] = (
            ("keys", plugins.keys_format),
            ("headers", plugins.headers_format),
        )
        for kind, fmt in sidecar_formats:
            if fmt is None:
                continue
            side_key = self._sidecar_key(key, kind)
            upload = self.store.create(side_key, self._object_metadata())
            file.sidecars.append(
                Sidecar(
                    kind,
                    side_key,
                    upload,
                    fmt.writer(cast(BinaryIO, upload), FileContext(self.topic, self.partition, first_offset, side_key)),
                )
            )
        return file

    def _object_metadata(self) -> dict[str, str]:
        """The object metadata every file of a chunk carries: its chunk manifest's key, so a kafka-s3 backup is
        recognisable from its data objects alone (a copy of the bucket without its manifests is then "missing",
        never taken for another tool's bucket). Not in the bytes: objects stay byte-identical to the peers'."""
        start = self.chunk_start if self.chunk_start is not None else 0
        return {OBJECT_METADATA: self.manifests.key(self.topic, self.partition, start)}

    def _open_staged(self, encoded: str, first_offset: int) -> OpenFile:
        """An object named when it closes (Lenses' layout): its bytes are staged (:mod:`.staging`). A replayed chunk's
        object already in the bucket whole is not written again."""
        layout = self.plugins.layout
        partitioned = encoded if self.plugins.partitioner.name == "kcql" else None  # PARTITIONBY's directories
        directory = layout.directory(self.topic, self.partition, partitioned)  # type: ignore[attr-defined]
        recorded = ""
        if self.replaying is not None:
            recorded = next((e.key for e in self.replaying.files if e.kind == "data" and e.directory == directory), "")
        file = OpenFile(encoded, recorded, directory, first_offset)
        if recorded and self._stored_whole(recorded):
            self.replayed_files += 1
            return file
        staged = StagedUpload(f"{layout.join(layout.topics_dir, directory)}/ (staged from offset {first_offset})")
        file.upload = staged
        ctx = FileContext(self.topic, self.partition, first_offset, staged.key)
        file.writer = self.plugins.value_format.writer(cast(BinaryIO, staged), ctx)
        return file

    def _name_staged(self, f: OpenFile) -> None:
        """Upload a closed staged object under its name: Lenses' ``<last offset>_<minTs>_<maxTs>`` (a replayed chunk
        keeps the name its manifest recorded, which the same records give anyway)."""
        staged = cast(StagedUpload, f.upload)
        layout = self.plugins.layout
        key: str = layout.final_key(  # type: ignore[attr-defined]
            self.topic,
            self.partition,
            f.last_offset,
            -1 if f.untimed or f.first_timestamp is None else f.first_timestamp,
            -1 if f.last_timestamp is None else f.last_timestamp,
            self.plugins.value_format.extension,
            f.directory if self.plugins.partitioner.name == "kcql" else None,
        )
        if f.key and f.key != key:
            log.warning(
                "%s: the re-created object of offsets %d..%d is named %s, its chunk's manifest recorded %s: kept the "
                "manifest's name",
                self.where,
                f.first_offset,
                f.last_offset,
                key,
                f.key,
            )
            key = f.key
        f.key = key
        f.upload = staged.upload_as(self.store, key, self._object_metadata())

    def _sidecar_key(self, key: str, kind: Kind) -> str:
        plugins = self.plugins
        fmt = plugins.keys_format if kind == "keys" else plugins.headers_format
        assert fmt is not None
        return plugins.layout.sidecar_key(key, plugins.value_format.extension, kind, fmt.extension)

    # ------------------------------------------------------------------------------------------------ commit
    def _commit_chunk(self) -> None:
        files = list(self.open.values())
        replaying, self.replaying = self.replaying, None
        first_record, last_record = self.chunk_first_record, self.chunk_last_record
        self.open = {}
        self.chunk_start = None
        self.chunk_first_timestamp = None
        self.chunk_first_record = self.chunk_last_record = None
        if not files:
            return
        entries = []
        for f in files:
            if f.writer is not None:
                f.writer.close()
                if isinstance(f.upload, StagedUpload):
                    self._name_staged(f)
                self._add_index(f)
            if f.writer is not None or f.tombstones is not None:
                for s in f.sidecars:  # keys and headers only: the index sidecar (no writer) is added just above
                    if s.writer is not None:
                        s.writer.close()
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
                        _ambiguous(f.writer),
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
                        _ambiguous(s.writer),
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
            follows=self._follows(start) if replaying is None else replaying.follows,
            source_topic_id=self.topic_id or None,
            first_record=first_record,
            last_record=last_record,
        )
        if replaying is not None:
            stored = replaying
            if replaying.end == manifest.end:
                self._same_record(replaying, replaying.end, replaying.last_record, last_record)
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
        self._reap_commits(keep=MAX_PENDING_COMMITS - 1)
        if self._committer is None:
            self._committer = ThreadPoolExecutor(max_workers=2, thread_name_prefix="commit")
        self._pending.append(self._committer.submit(self._commit_files, files))
        self.committed.append(stored)
        self._previous_end, self._previous_known = stored.end, True

    def _follows(self, start: int) -> int | None:
        """End of the chunk the bucket holds before ``start`` (None: this is the backup's first chunk). The same on a
        replay: the chunks before it are the same manifests (created once, never replaced)."""
        if not self._previous_known:
            earlier = [s for s in self.manifests.starts(self.topic, self.partition) if s < start]
            previous = self.manifests.get(self.topic, self.partition, earlier[-1]) if earlier else None
            self._previous_end, self._previous_known = (previous.end if previous else None), True
        return self._previous_end

    def _commit_files(self, files: list[OpenFile]) -> int:
        """Complete a chunk's uploads, sidecars before their data object; returns how many were already stored."""
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
        return existing

    def _stored_whole(self, key: str) -> bool:
        """Whether a replayed chunk's object is in the bucket as its manifest recorded it. One smaller than that is a
        write of this chunk cut short (a PUT interrupted when a run was killed can leave a stub) when the chunk's
        first record is the one the manifest recorded (checked before this): it is removed, and the chunk's records
        write it again. Anything else under the key is not provably this chunk's: refused, never deleted."""
        info = self.store.head(key)
        if info is None:
            return False
        replaying = cast(Manifest, self.replaying)
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
        cursor_key = getattr(self.plugins.layout, "cursor_key", None)
        if cursor_key is None:
            return
        newest = max(files, key=lambda f: f.first_offset)
        index = next((side.key for side in newest.sidecars if side.kind == "index"), None)
        if index is None:
            return
        with self._cursor_lock:
            if newest.first_offset > self._cursor_offset:
                key = cursor_key(self.topic, self.partition)
                # Stores create conditionally only: the cursor is replaced (DeviantArt's task reads it at start).
                self.store.delete([key])
                with contextlib.suppress(ObjectExistsError):  # another run put it back meanwhile: as new as ours
                    self.store.put(key, index.encode())
                self._cursor_offset = newest.first_offset

    def _move_lock(self, files: list[OpenFile]) -> None:
        """A layout with a lock object per topic-partition (Lenses' ``.indexes/<connector>/.locks/<topic>/<p>.lock``,
        LS ``seek/IndexManagerV2``) has it hold the newest committed offset once the chunk is stored."""
        lock_object = getattr(self.plugins.layout, "lock_object", None)
        if lock_object is None:
            return
        last = max(f.last_offset for f in files)
        with self._cursor_lock:
            if last > self._lock_offset:
                key, body = lock_object(self.plugins.config["name"], self.topic, self.partition, last)
                # Stores create conditionally only: the lock is replaced, as the DeviantArt cursor is.
                self.store.delete([key])
                with contextlib.suppress(ObjectExistsError):  # another run put it back meanwhile
                    self.store.put(key, body)
                self._lock_offset = last

    def _reap_commits(self, keep: int = 0) -> None:
        """Wait until at most ``keep`` chunk commits are in flight; a failed commit raises here."""
        while len(self._pending) > keep:
            self.replayed_files += self._pending.pop(0).result()

    def _add_index(self, f: OpenFile) -> None:
        """The value format's index sidecar (e.g. block_gzip's block offsets), known once the data writer closed:
        uploaded now, committed with the chunk's other files."""
        index = f.writer.index() if f.writer is not None else None
        if index is None:
            return
        fmt = self.plugins.value_format
        key = self.plugins.layout.sidecar_key(f.key, fmt.extension, "index", fmt.index_extension or "")
        upload = self.store.create(key, self._object_metadata())
        f.sidecars.append(Sidecar("index", key, upload, None))
        upload.write(index)

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

    # ------------------------------------------------------------------------------------------------ end
    def abort_open(self) -> None:
        """Discard the open chunk (its files were never visible) and let background commits settle."""
        for f in self.open.values():
            f.abort()
        self.open = {}
        for future in self._pending:
            future.exception()  # wait; a failure surfaces in finish() or settle(), or the task is failing already

    def settle(self) -> None:
        """Wait for the chunks completing in the background and raise the first failure: a chunk whose files did
        not complete is not durable, so nothing after it may be reported as committed."""
        try:
            self._reap_commits()
        finally:
            self._pending.clear()
            if self._committer is not None:
                self._committer.shutdown()
                self._committer = None

    def finish(
        self, read_until: int, flush_open: bool, start: int | None = None, read_bytes: int = 0, error: str | None = None
    ) -> PartitionResult:
        """End of input: commit the open chunk when asked (``--once``) or when a scheduled rotation is due;
        otherwise discard it (the next cycle re-reads it from its first offset). Returns the task's result
        (``start``: where the task began reading, by default ``read_until``)."""
        open_start = self.chunk_start if self.open else None
        open_records = sum(f.records for f in self.open.values())
        open_first_ts = self.chunk_first_timestamp
        if self.open and (flush_open or self.rotator.close_if_due(int(self.clock() * 1000))):
            self._commit_chunk()
            open_start = None
            open_records = 0
        else:
            self.abort_open()
        self.settle()
        return PartitionResult(
            topic=self.topic,
            partition=self.partition,
            start=read_until if start is None else start,
            read_until=read_until,
            committed_offset=open_start if open_start is not None else read_until,
            chunks=tuple(self.committed),
            open_chunk=None if open_start is None else OpenChunk(open_start, open_records, open_first_ts),
            records_in=self.records_in,
            replayed_files=self.replayed_files,
            read_bytes=read_bytes,
            error=error,
        )
