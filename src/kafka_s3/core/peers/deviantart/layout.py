"""DeviantArt's S3 layout (facts sheet C; DA ``src/main/java/com/deviantart/kafka_connect_s3/``).

==============================================================  ================================================
object                                                          source
==============================================================  ================================================
``<s3.prefix>/<yyyy-MM-dd>/<topic>-<p %05d>-<offset %012d>.gz``  ``BlockGZIPFileWriter.getDataFileName``,
                                                                ``S3Writer.getChunkFileKey`` (the upload date)
``<s3.prefix>/<yyyy-MM-dd>/<topic>-<p %05d>-<offset %012d>.index.json``  the same name, the block index
``<s3.prefix>/last_chunk_index.<topic>-<p %05d>.txt``           ``S3Writer.updateCursorFile``: the newest index key
==============================================================  ================================================

The offset in a name is the object's first record's offset (counted by DeviantArt's task from the previous index:
``S3Writer.fetchOffset``). Objects are gzip members of lines, one record value per line, read by the ``block_gzip``
format; the index lists the members. No keys, headers or timestamps are stored.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from kafka_s3.core.errors import LayoutError
from kafka_s3.core.layout import Kind, Layout, ObjectName

if TYPE_CHECKING:
    from kafka_s3.core.config.model import Config

DATA_EXTENSION = ".gz"
INDEX_EXTENSION = ".index.json"
CURSOR_PREFIX = "last_chunk_index."

_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_NAME = re.compile(r"^(?P<topic>.+)-(?P<partition>\d{5,})-(?P<offset>\d{12,})$")
TOPIC = r"[A-Za-z0-9._-]+"
_CLAIMED_DATA = re.compile(rf"^\d{{4}}-\d{{2}}-\d{{2}}/{TOPIC}-\d{{5}}-\d{{12}}\.gz(\.index\.json)?$")
_CLAIMED_CURSOR = re.compile(rf"^last_chunk_index\.{TOPIC}-\d{{5}}\.txt$")


def claims(key: str, delim: str, file_delim: str) -> bool:
    """Whether DeviantArt's connector wrote ``key`` (relative to the prefix): ``<yyyy-MM-dd>/<topic>-<partition
    %05d>-<offset %012d>.gz[.index.json]`` or ``last_chunk_index.<topic>-<partition %05d>.txt``."""
    return bool(_CLAIMED_DATA.match(key) or _CLAIMED_CURSOR.match(key))


def upload_date() -> str:
    """Today (UTC) as ``yyyy-MM-dd``: DeviantArt names its date directories after the upload."""
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%d")


@dataclass(frozen=True)
class DeviantArtLayout(Layout):
    """DeviantArt's names under ``<s3.prefix>`` (``topics_dir``); ``directory`` is the ``yyyy-MM-dd`` date."""

    lists_whole_prefix = True  # date directories come first, not topics
    value_format: ClassVar[str | None] = "block_gzip"  # lines in gzip members with a block index
    dated_by_upload = True  # UTC

    @classmethod
    def from_config(cls, config: Config) -> DeviantArtLayout:
        prefix = config["topics.dir"].strip("/") if config["topics.dir"] else ""
        return cls(topics_dir=prefix, directory_delim="/", file_delim="-", zero_pad_width=12)

    def base_name(self, topic: str, partition: int, start_offset: int) -> str:
        return f"{topic}-{partition:05d}-{start_offset:012d}"

    def object_key(self, directory: str, topic: str, partition: int, start_offset: int, extension: str) -> str:
        """``<prefix>/<yyyy-MM-dd>/<topic>-<p %05d>-<offset %012d><ext>``: the date of the upload (UTC), whatever the
        partitioner's ``directory`` (DA ``S3Writer.getChunkFileKey``)."""
        return self.join(self.topics_dir, upload_date(), self.base_name(topic, partition, start_offset) + extension)

    def sidecar_key(self, data_key: str, data_extension: str, kind: Kind, sidecar_extension: str) -> str:
        """The block index is ``<name>.index.json`` (DA ``BlockGZIPFileWriter``); DeviantArt writes no other."""
        if kind != "index":
            raise LayoutError(f"DeviantArt's layout has no {kind} objects (store.kafka.{kind}=false)")
        return data_key[: len(data_key) - len(data_extension)] + INDEX_EXTENSION

    def topic_prefix(self, topic: str | None = None) -> str:
        return self.topics_dir + "/" if self.topics_dir else ""

    def cursor_key(self, topic: str, partition: int) -> str:
        """``S3Writer.updateCursorFile``: ``<prefix/>last_chunk_index.<topic>-<p %05d>.txt``."""
        return f"{self.topic_prefix()}{CURSOR_PREFIX}{topic}-{partition:05d}.txt"

    def parse(self, key: str, extensions: dict[str, Kind]) -> ObjectName | None:
        """A data object (``.gz``) or its index (``.index.json``) in a date directory; ``None`` for cursors and other
        keys. A ``.gz`` in a date directory whose name is not DeviantArt's raises :class:`LayoutError`."""
        prefix = self.topic_prefix()
        if not key.startswith(prefix):
            return None
        parts = key[len(prefix) :].split("/")
        if len(parts) != 2 or not _DATE.match(parts[0]):
            return None
        filename = parts[1]
        extension = next((e for e in (INDEX_EXTENSION, DATA_EXTENSION) if filename.endswith(e)), None)
        if extension is None:
            return None
        match = _NAME.match(filename[: len(filename) - len(extension)])
        if not match:
            raise LayoutError(
                f"object {key} is in a DeviantArt date directory with a {extension} extension but its name is not "
                f"<topic>-<partition %05d>-<offset %012d>{extension}"
            )
        found: Kind = "index" if extension == INDEX_EXTENSION else "data"
        return ObjectName(
            key=key,
            topic=match.group("topic"),
            partition=int(match.group("partition")),
            start_offset=int(match.group("offset")),
            directory=parts[0],
            extension=extension,
            kind=found,
        )
