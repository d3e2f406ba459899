"""Backing up one topic-partition: ordered record batches in, committed chunks of objects out.

This is Confluent's TopicPartitionWriter re-thought for Arrow batches: converters, the partitioner and the rotation
rules run on whole batches; rows are grouped per encoded partition and streamed to the format writers, which write
straight into conditional uploads. This module is the write path (rows into the open chunk's files); the files'
names and uploads are :mod:`.naming`'s, committing a closed chunk (manifest first, files next) is :mod:`.commit`'s,
and plugin wiring and value fitting live in :mod:`.plugins` and :mod:`.values`. A crash at any point followed by a
re-run converges on the same objects.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import SupportsInt, cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kafka_s3.core.converters.base import Converted, Converter, Logical, ValueSchema
from kafka_s3.core.converters.json import NULL_VALUES
from kafka_s3.core.errors import ConversionError, DataError
from kafka_s3.core.formats.base import FormatWriter
from kafka_s3.core.manifest import Manifest, ManifestStore
from kafka_s3.core.records import record_checksum, timestamps_ms
from kafka_s3.core.rotation import Rotator
from kafka_s3.core.schema_evolution import Compatibility, SchemaJudge
from kafka_s3.core.store import Store
from kafka_s3.pipelines.backup.commit import ChunkCommitter
from kafka_s3.pipelines.backup.files import OpenFile
from kafka_s3.pipelines.backup.naming import FileNaming
from kafka_s3.pipelines.backup.plugins import BackupPlugins
from kafka_s3.pipelines.backup.result import OpenChunk, PartitionResult
from kafka_s3.pipelines.backup.staging import StagedUpload
from kafka_s3.pipelines.backup.values import Values

log = logging.getLogger(__name__)


# ------------------------------------------------------------------------------------------------ open files


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
        self.records_in = 0
        self._replays: dict[int, Manifest] = {}  # chunk start -> manifest found by the rotator's hook
        self.committer = ChunkCommitter(plugins, store, topic, partition, self.manifests, topic_id, previous)
        self.naming = FileNaming(plugins, store, topic, partition, self.manifests, self.committer)

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
                self.committer.same_record(replaying, replaying.start, replaying.first_record, self.chunk_first_record)
        self.chunk_last_record = record_checksum(batch, stop - 1)

    def _encode(self, batch: pa.RecordBatch, values: Values, now_ms: int) -> pa.Array:
        """Encoded partitions; null values go to the tombstone directory (Confluent's ``tombstone.encoded.partition``):
        always under behavior.on.null.values=write (CS ``util/TombstoneSupportedPartitioner.encodePartition``), and
        in envelope mode when the partitioner needs values."""
        partitioner = self.plugins.partitioner
        nulls = batch.column("value").is_null()
        if not (partitioner.uses_values or self.naming.writes_tombstones) or not pc.any(nulls).as_py():
            return values.encode_with(partitioner, batch, now_ms)
        present = np.flatnonzero(~nulls.to_numpy(zero_copy_only=False))
        out = np.full(batch.num_rows, self.plugins.tombstone_partition, dtype=object)
        if len(present):
            subset = Values(values.converted_take(present), len(present))
            out[present] = subset.encode_with(partitioner, batch.take(pa.array(present)), now_ms).to_numpy(
                zero_copy_only=False
            )
        return pa.array(out, pa.string())

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
            start = self.chunk_start if self.chunk_start is not None else int(first)
            file = self.naming.open(encoded, int(first), start, self.replaying)
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

    # ------------------------------------------------------------------------------------------------ commit
    def _commit_chunk(self) -> None:
        """The open chunk is closed: its writers finish, objects named at close get their names, and the commit
        protocol takes the files (:meth:`.commit.ChunkCommitter.commit`)."""
        files = list(self.open.values())
        replaying, self.replaying = self.replaying, None
        first_record, last_record = self.chunk_first_record, self.chunk_last_record
        self.open = {}
        self.chunk_start = None
        self.chunk_first_timestamp = None
        self.chunk_first_record = self.chunk_last_record = None
        if not files:
            return
        start = min(f.first_offset for f in files)  # the chunk manifest's start: what its files' metadata name
        for f in files:
            if f.writer is not None:
                f.writer.close()
                if isinstance(f.upload, StagedUpload):
                    self.naming.name_staged(f, start)
                self.naming.add_index(f, start)
            if f.writer is not None or f.tombstones is not None:
                for s in f.sidecars:  # keys and headers only: the index sidecar (no writer) is added just above
                    if s.writer is not None:
                        s.writer.close()
        self.committer.commit(files, replaying, first_record, last_record)

    # ------------------------------------------------------------------------------------------------ end
    def abort_open(self) -> None:
        """Discard the open chunk (its files were never visible) and let background commits settle."""
        for f in self.open.values():
            f.abort()
        self.open = {}
        self.committer.wait()

    def settle(self) -> None:
        """Wait for the chunks completing in the background and raise the first failure: a chunk whose files did
        not complete is not durable, so nothing after it may be reported as committed."""
        self.committer.settle()

    @property
    def committed(self) -> list[Manifest]:
        """The chunks committed by this writer (replayed ones included)."""
        return self.committer.committed

    @property
    def replayed_files(self) -> int:
        return self.committer.replayed_files

    def finish(
        self, read_until: int, flush_open: bool, start: int | None = None, read_bytes: int = 0, error: str | None = None
    ) -> PartitionResult:
        """End of input: commit the open chunk when asked (``--once``) or when a scheduled rotation is due;
        otherwise discard it (the next cycle re-reads it from its first offset). Returns the task's result
        (``start``: where the task began reading, by default ``read_until``)."""
        open_start = self.chunk_start if self.open else None
        open_records = sum(f.records for f in self.open.values())
        open_first_ts = self.chunk_first_timestamp
        # A replayed chunk closes only where its manifest ends (the rotator cuts it there): a log whose stable end
        # is still inside it (an open transaction) leaves it open, so the next chunk never starts inside it.
        replaying = self.replaying
        short_replay = replaying is not None and read_until <= replaying.end
        if replaying is not None and short_replay:
            log.info(
                "%s: chunk %d..%d waits for the log's records up to %d (readable below %d now); the next cycle "
                "replays it",
                self.where,
                replaying.start,
                replaying.end,
                replaying.end,
                read_until,
            )
        if self.open and not short_replay and (flush_open or self.rotator.close_if_due(int(self.clock() * 1000))):
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
