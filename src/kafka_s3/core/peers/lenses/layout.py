"""Lenses stream-reactor's S3 layout (facts sheet B1; LS ``sink/naming/FileNamer.scala``, ``CloudKeyNamer``).

=====================  ===================================================================================
KCQL                   object key
=====================  ===================================================================================
no PARTITIONBY         ``<prefix>/<topic>/<partition>/<offset %012d>_<minTs>_<maxTs>.<ext>`` (≥7.2.0), or
                       ``<prefix>/<topic>/<partition>/<offset>.<ext>`` (earlier versions: 12 digits from 5.x,
                       unpadded before)
PARTITIONBY a,b        ``<prefix>/a=<v>/b=<v>/<topic>(<partition>_<offset %012d>).<ext>``
=====================  ===================================================================================

The offset in a name is the **last** record's offset (LS ``writer/Writer.commit`` names the file after
``uncommittedOffset``). Discovery therefore knows where each object ends; where it starts is the end of the object
before it in the same directory, plus one (:func:`~kafka_s3.core.layout.assign_starts`). Lenses keeps its
exactly-once index objects at the bucket root under ``.indexes/`` (facts sheet B4): they are never data.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kafka_s3.core.errors import LayoutError
from kafka_s3.core.layout import Kind, Layout, ObjectName

if TYPE_CHECKING:
    from kafka_s3.core.config.model import Config

INDEX_DIR = ".indexes"

_PLAIN_NAME = re.compile(r"^(?P<offset>\d+)(?:_(?P<min>-?\d+)_(?P<max>-?\d+))?$")
_PARTITIONED_NAME = re.compile(r"^(?P<topic>[A-Za-z0-9._-]+)\((?P<partition>\d+)_(?P<offset>\d+)\)$")
_PARTITION_DIR = re.compile(r"^\d+$")
TOPIC = r"[A-Za-z0-9._-]+"
_CLAIMED_PLAIN = re.compile(rf"^{TOPIC}/\d+/\d+(_-?\d+_-?\d+)?\.[A-Za-z0-9.]+$")
_CLAIMED_PARTITIONED = re.compile(rf"(^|/){TOPIC}\(\d+_\d+\)\.[A-Za-z0-9.]+$")


def claims(key: str, delim: str, file_delim: str) -> bool:
    """Whether Lenses' sink wrote ``key`` (relative to the prefix): ``<topic>/<partition>/<offset>[_<minTs>_<maxTs>]
    .<ext>``, ``…/<topic>(<partition>_<offset>).<ext>``, or its ``.indexes/`` (at the bucket root)."""
    return key.startswith(INDEX_DIR + "/") or bool(_CLAIMED_PLAIN.match(key) or _CLAIMED_PARTITIONED.search(key))


@dataclass(frozen=True)
class LensesLayout(Layout):
    """Lenses' object names under ``<prefix>`` (``topics_dir``). ``ObjectName.start_offset`` of a parsed name is the
    offset the name holds: the object's **last** offset (see the module docstring)."""

    #: widths of the numbers in names by field (``offset``, ``partition``): Lenses' ``padding.*`` PROPERTIES (LS
    #: ``config/padding/PaddingService``), offsets to 12 digits by default; a field not listed is not padded
    padding: tuple[tuple[str, int], ...] = (("offset", 12),)

    @classmethod
    def from_config(cls, config: Config) -> LensesLayout:
        from kafka_s3.core.peers.lenses.policy import lenses_padding

        prefix = config["topics.dir"].strip("/") if config["topics.dir"] else ""
        padding = tuple(sorted(lenses_padding(config).items()))
        return cls(topics_dir=prefix, directory_delim="/", file_delim="_", zero_pad_width=12, padding=padding)

    def pad(self, field: str, number: int) -> str:
        """``number`` left-padded with ``0`` to the field's width (LS ``LeftPadPaddingStrategy.padString``)."""
        return str(number).rjust(dict(self.padding).get(field, 0), "0")

    lists_whole_prefix = True  # with PARTITIONBY no directory names the topic
    names_hold_last_offset = True

    def topic_prefix(self, topic: str | None = None) -> str:
        return self.topics_dir + "/" if self.topics_dir else ""

    # ------------------------------------------------------------------------------------------------ building
    # names are decided when an object closes (its last offset and timestamps): a backup stages the bytes, as Lenses'
    # sink does (LS ``writer/Writer``: a local staging file uploaded under its name at ``commit``)
    names_at_close = True

    def directory(self, topic: str, partition: int, partitioned: str | None = None) -> str:
        """Where the objects of a topic-partition go: ``<topic>/<partition>`` without PARTITIONBY, else the
        PARTITIONBY directories ``partitioned`` (``a=<v>/b=<v>``, LS ``sink/naming/CloudKeyNamer
        .buildPartitionPrefix``)."""
        return partitioned if partitioned is not None else f"{topic}/{self.pad('partition', partition)}"

    def final_key(
        self,
        topic: str,
        partition: int,
        last_offset: int,
        min_timestamp: int,
        max_timestamp: int,
        extension: str,
        partitioned: str | None = None,
    ) -> str:
        """Without PARTITIONBY ``<prefix>/<topic>/<partition>/<last offset %012d>_<minTs>_<maxTs><ext>`` (LS
        ``sink/naming/FileNamer.OffsetFileNamer.fileName``); with it ``<prefix>/<partitioned>/<topic>(<partition>_<last
        offset %012d>)<ext>`` (``FileNamer.TopicPartitionOffsetFileNamer.fileName``, ``CloudKeyNamer.finalFilename``).
        Default padding (``config/padding/PaddingService``): offsets to 12 digits, partitions unpadded; timestamps in
        epoch ms, -1 for a record without one."""
        offset = self.pad("offset", last_offset)
        if partitioned is not None:
            name = f"{topic}({self.pad('partition', partition)}_{offset}){extension}"
        else:
            name = f"{offset}_{min_timestamp}_{max_timestamp}{extension}"
        return self.join(self.topics_dir, self.directory(topic, partition, partitioned), name)

    def lock_object(self, connector: str, topic: str, partition: int, committed_offset: int) -> tuple[str, bytes]:
        """Lenses' exactly-once lock of a topic-partition (≥9.0.0; LS ``seek/IndexManagerV2``, ``seek/IndexModel
        .IndexFile`` encoded by circe's derived encoder, compact): ``.indexes/<connector>/.locks/<topic>/
        <partition>.lock`` at the bucket root, ``{"owner":…,"committedOffset":N,"pendingState":null}`` with N the
        last offset written. The owner is a task's UUID in Lenses; here one derived from the connector and
        topic-partition (the same on every run, so a re-run writes the same bytes)."""
        owner = uuid.uuid5(uuid.NAMESPACE_URL, f"kafka-s3:{connector}:{topic}:{partition}")
        key = f"{INDEX_DIR}/{connector}/.locks/{topic}/{partition}.lock"
        body = f'{{"owner":"{owner}","committedOffset":{committed_offset},"pendingState":null}}'
        return key, body.encode()

    def parse(self, key: str, extensions: dict[str, Kind]) -> ObjectName | None:
        """A Lenses data object's name, ``None`` for keys outside the prefix, with another extension or under
        ``.indexes/``; a key with a data extension whose name is not Lenses' raises :class:`LayoutError`."""
        prefix = self.topic_prefix()
        if not key.startswith(prefix) or key.startswith(INDEX_DIR + "/"):
            return None
        parts = key[len(prefix) :].split("/")
        filename = parts[-1]
        found = [(ext, kind) for ext, kind in extensions.items() if kind == "data" and filename.endswith(ext)]
        if not found:
            return None
        extension = max(found, key=lambda item: len(item[0]))[0]
        stem = filename[: len(filename) - len(extension)]
        directory = "/".join(parts[:-1])
        match = _PLAIN_NAME.match(stem)
        if match and len(parts) >= 3 and _PARTITION_DIR.match(parts[-2]):
            return ObjectName(key, parts[-3], int(parts[-2]), int(match.group("offset")), directory, extension)
        match = _PARTITIONED_NAME.match(stem)
        if match:
            return ObjectName(
                key,
                match.group("topic"),
                int(match.group("partition")),
                int(match.group("offset")),
                directory,
                extension,
            )
        raise LayoutError(
            f"object {key} is inside {prefix or 'the bucket'} with a {extension} extension but its name is not Lenses' "
            f"<topic>/<partition>/<offset>[_<minTs>_<maxTs>]{extension} nor <topic>(<partition>_<offset>){extension}"
        )
