"""The names of a chunk's files, and the uploads they stream into.

Confluent's names (kafka-s3's own) are known when a file opens; a peer's layout may differ through its hooks
(:class:`~kafka_s3.core.layout.Layout`): a name holding the upload date keeps the one a replayed chunk's manifest
recorded (DeviantArt's), a name decided when the object closes stages its bytes first (Lenses'). Every file carries
its chunk manifest's key in its object metadata, so a backup is recognisable from its objects alone.
"""

from __future__ import annotations

import logging
from typing import BinaryIO, cast

from kafka_s3.core.formats.base import FileContext, Format
from kafka_s3.core.layout import Kind
from kafka_s3.core.manifest import OBJECT_METADATA, Manifest, ManifestStore
from kafka_s3.core.store import Store
from kafka_s3.pipelines.backup.commit import ChunkCommitter
from kafka_s3.pipelines.backup.files import OpenFile, Sidecar
from kafka_s3.pipelines.backup.plugins import BackupPlugins
from kafka_s3.pipelines.backup.staging import StagedUpload

log = logging.getLogger("kafka_s3.pipelines.backup.partition")


class FileNaming:
    """Opens the files of one topic-partition's chunks under their names (``committer``: the commit protocol, which
    says whether a replayed chunk's object is stored whole)."""

    def __init__(
        self,
        plugins: BackupPlugins,
        store: Store,
        topic: str,
        partition: int,
        manifests: ManifestStore,
        committer: ChunkCommitter,
    ):
        self.plugins = plugins
        self.store = store
        self.topic = topic
        self.partition = partition
        self.manifests = manifests
        self.committer = committer

    @property
    def writes_tombstones(self) -> bool:
        """Tombstones kept as Confluent keeps them: keys and headers only, in the tombstone directory."""
        return not self.plugins.envelope and self.plugins.null_behavior == "write"

    def open(self, encoded: str, first_offset: int, chunk_start: int, replaying: Manifest | None) -> OpenFile:
        """The file of encoded partition ``encoded`` starting at ``first_offset`` in the chunk starting at
        ``chunk_start``: its uploads opened, or none when ``replaying`` (the chunk's manifest) finds it stored whole."""
        plugins = self.plugins
        if plugins.names_at_close:
            return self._open_staged(encoded, first_offset, chunk_start, replaying)
        directory = plugins.partitioner.path(self.topic, encoded)
        key = plugins.layout.object_key(
            directory, self.topic, self.partition, first_offset, plugins.value_format.extension
        )
        if replaying is not None and plugins.layout.dated_by_upload:
            # A name holding the upload date (DeviantArt's) is the one the chunk's manifest recorded.
            name = key.rsplit(plugins.layout.directory_delim, 1)[-1]
            key = next((e.key for e in replaying.files if e.kind == "data" and e.key.endswith("/" + name)), key)
        file = OpenFile(encoded, key, directory, first_offset)
        tombstones = self.writes_tombstones and encoded == plugins.tombstone_partition
        if tombstones:
            file.tombstones = []
        # a tombstone file has no value object: its keys sidecar stands for it
        stored = key if not tombstones else self.sidecar_key(key, "keys")
        if replaying is not None and self.committer.stored_whole(stored, replaying):
            self.committer.replayed_files += 1
            file.tombstones = None
            return file
        if not tombstones:
            ctx = FileContext(self.topic, self.partition, first_offset, key)
            file.upload = self.store.create(key, self.metadata(chunk_start))
            # an Upload is the binary file format writers write to (typed BinaryIO in the Format contract)
            file.writer = plugins.value_format.writer(cast(BinaryIO, file.upload), ctx)
        sidecar_formats: tuple[tuple[Kind, Format | None], ...] = (
            ("keys", plugins.keys_format),
            ("headers", plugins.headers_format),
        )
        for kind, fmt in sidecar_formats:
            if fmt is None:
                continue
            side_key = self.sidecar_key(key, kind)
            upload = self.store.create(side_key, self.metadata(chunk_start))
            file.sidecars.append(
                Sidecar(
                    kind,
                    side_key,
                    upload,
                    fmt.writer(cast(BinaryIO, upload), FileContext(self.topic, self.partition, first_offset, side_key)),
                )
            )
        return file

    def metadata(self, chunk_start: int) -> dict[str, str]:
        """The object metadata every file of a chunk carries: its chunk manifest's key, so a kafka-s3 backup is
        recognisable from its data objects alone (a copy of the bucket without its manifests is then "missing",
        never taken for another tool's bucket). Not in the bytes: objects stay byte-identical to the peers'."""
        return {OBJECT_METADATA: self.manifests.key(self.topic, self.partition, chunk_start)}

    def _open_staged(self, encoded: str, first_offset: int, chunk_start: int, replaying: Manifest | None) -> OpenFile:
        """An object named when it closes (``Layout.names_at_close``: Lenses'): its bytes are staged (:mod:`.staging`).
        A replayed chunk's object already in the bucket whole is not written again."""
        layout = self.plugins.layout
        partitioned = self._partitioned(encoded)
        directory = layout.directory(self.topic, self.partition, partitioned)
        recorded = ""
        if replaying is not None:
            recorded = next((e.key for e in replaying.files if e.kind == "data" and e.directory == directory), "")
        file = OpenFile(encoded, recorded, directory, first_offset)
        if recorded and replaying is not None and self.committer.stored_whole(recorded, replaying):
            self.committer.replayed_files += 1
            return file
        staged = StagedUpload(f"{layout.join(layout.topics_dir, directory)}/ (staged from offset {first_offset})")
        file.upload = staged
        ctx = FileContext(self.topic, self.partition, first_offset, staged.key)
        file.writer = self.plugins.value_format.writer(cast(BinaryIO, staged), ctx)
        return file

    def _partitioned(self, directory: str) -> str | None:
        """The partitioner's directories for a layout naming its own (``None``: the records' Kafka partition, which
        the layout names itself)."""
        return None if self.plugins.partitioner.by_kafka_partition else directory

    def name_staged(self, f: OpenFile, chunk_start: int) -> None:
        """Upload a closed staged object under its name: Lenses' ``<last offset>_<minTs>_<maxTs>`` (a replayed chunk
        keeps the name its manifest recorded, which the same records give anyway)."""
        staged = cast(StagedUpload, f.upload)
        layout = self.plugins.layout
        key = layout.final_key(
            self.topic,
            self.partition,
            f.last_offset,
            -1 if f.untimed or f.first_timestamp is None else f.first_timestamp,
            -1 if f.last_timestamp is None else f.last_timestamp,
            self.plugins.value_format.extension,
            self._partitioned(f.directory),
        )
        if f.key and f.key != key:
            log.warning(
                "%s: the re-created object of offsets %d..%d is named %s, its chunk's manifest recorded %s: kept the "
                "manifest's name",
                f"{self.topic}[{self.partition}]",
                f.first_offset,
                f.last_offset,
                key,
                f.key,
            )
            key = f.key
        f.key = key
        f.upload = staged.upload_as(self.store, key, self.metadata(chunk_start))

    def sidecar_key(self, key: str, kind: Kind) -> str:
        plugins = self.plugins
        fmt = plugins.keys_format if kind == "keys" else plugins.headers_format
        assert fmt is not None
        return plugins.layout.sidecar_key(key, plugins.value_format.extension, kind, fmt.extension)

    def add_index(self, f: OpenFile, chunk_start: int) -> None:
        """The value format's index sidecar (e.g. block_gzip's block offsets), known once the data writer closed:
        uploaded now, committed with the chunk's other files."""
        index = f.writer.index() if f.writer is not None else None
        if index is None:
            return
        fmt = self.plugins.value_format
        key = self.plugins.layout.sidecar_key(f.key, fmt.extension, "index", fmt.index_extension or "")
        upload = self.store.create(key, self.metadata(chunk_start))
        f.sidecars.append(Sidecar("index", key, upload, None))
        upload.write(index)
