"""Object keys: ``<topics.dir>/<topic>/<encodedPartition>/<topic>+<partition>+<startOffset><ext>`` and sidecars.

Building and parsing live together so that whatever the backup writes, the restore can read back: the two are
inverse functions and are tested as such.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Literal

from kafka_s3.core.errors import LayoutError

if TYPE_CHECKING:
    from kafka_s3.core.config.model import Config

Kind = Literal["data", "keys", "headers", "index"]
SIDE_SUFFIXES: dict[str, Kind] = {".keys": "keys", ".headers": "headers", ".index": "index"}


@dataclass(frozen=True)
class ObjectName:
    """What an object key says about its contents."""

    key: str
    topic: str
    partition: int
    start_offset: int
    directory: str  # the partitioner's path: between topics.dir and the file name (``<topic>/<encodedPartition>``)
    extension: str  # e.g. ".avro", ".json.gz"
    kind: Kind = "data"


@dataclass(frozen=True)
class Layout:
    """Confluent's names (kafka-s3's own), and the hooks through which a peer's layout differs. A peer overrides what
    its tool does otherwise (``core/peers/<peer>/layout.py``); nothing probes a layout for attributes it may lack.
    """

    topics_dir: str = "topics"
    directory_delim: str = "/"
    file_delim: str = "+"
    zero_pad_width: int = 10

    # ------------------------------------------------------------------------------------------------ peer hooks
    #: every topic's objects are listed from the prefix itself (directories do not name topics)
    lists_whole_prefix = False
    #: a name holds its object's last offset, not its first (objects start after the one before them)
    names_hold_last_offset = False
    #: names are decided when an object closes (:meth:`directory` and :meth:`final_key`): a backup stages the bytes
    names_at_close = False
    #: the directory is the upload date, not the partitioner's path: a replayed chunk keeps its manifest's names
    dated_by_upload = False
    #: the format of the peer's objects whatever ``format.class`` says (``None``: the configured one)
    value_format: ClassVar[str | None] = None

    def directory(self, topic: str, partition: int, partitioned: str | None = None) -> str:
        """Where an object named at close goes (``names_at_close`` layouts only)."""
        raise LayoutError(f"{type(self).__name__} names objects when they open, not when they close")

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
        """An object's name once it is closed (``names_at_close`` layouts only)."""
        raise LayoutError(f"{type(self).__name__} names objects when they open, not when they close")

    def cursor_key(self, topic: str, partition: int) -> str | None:
        """The object pointing at a partition's newest chunk's index, moved as chunks commit (``None``: none)."""
        return None

    def lock_object(
        self, connector: str, topic: str, partition: int, committed_offset: int
    ) -> tuple[str, bytes] | None:
        """The key and bytes of a partition's lock object, holding its newest committed offset (``None``: none)."""
        return None

    @classmethod
    def from_config(cls, config: Config) -> Layout:
        return cls(
            topics_dir=config["topics.dir"].strip(config["directory.delim"]) if config["topics.dir"] else "",
            directory_delim=config["directory.delim"],
            file_delim=config["file.delim"],
            zero_pad_width=config.get("filename.offset.zero.pad.width", 10),
        )

    # ------------------------------------------------------------------------------------------------ building
    def base_name(self, topic: str, partition: int, start_offset: int) -> str:
        d = self.file_delim
        return f"{topic}{d}{partition}{d}{start_offset:0{self.zero_pad_width}d}"

    def object_key(self, directory: str, topic: str, partition: int, start_offset: int, extension: str) -> str:
        """``directory`` is the partitioner's path (``<topic>/<encodedPartition>`` for Confluent's partitioners)."""
        name = self.base_name(topic, partition, start_offset) + extension
        return self.join(self.topics_dir, directory, name)

    def sidecar_key(self, data_key: str, data_extension: str, kind: Kind, sidecar_extension: str) -> str:
        """``…/t+0+0000000000.avro`` → ``…/t+0+0000000000.keys.avro`` (the sidecar format's extension)."""
        if not data_key.endswith(data_extension):
            raise ValueError(f"{data_key} does not end with {data_extension}")
        suffix = next(s for s, k in SIDE_SUFFIXES.items() if k == kind)
        return data_key[: len(data_key) - len(data_extension)] + suffix + sidecar_extension

    def topic_prefix(self, topic: str | None = None) -> str:
        """Key prefix of every object of ``topic`` (or of every topic)."""
        root = self.topics_dir + self.directory_delim if self.topics_dir else ""
        return root + (topic + self.directory_delim if topic else "")

    def join(self, *parts: str) -> str:
        return self.directory_delim.join(p for p in parts if p)

    # ------------------------------------------------------------------------------------------------ parsing
    def _name_pattern(self) -> re.Pattern[str]:
        d = re.escape(self.file_delim)
        return re.compile(rf"^(?P<topic>[A-Za-z0-9._-]+){d}(?P<partition>\d+){d}(?P<offset>\d+)$")

    def parse(self, key: str, extensions: dict[str, Kind]) -> ObjectName | None:
        """Parse a key under ``topics.dir``.

        ``extensions`` maps the extensions to recognise (data and sidecar) to their kind; a key with another
        extension returns ``None`` (ignored, as Confluent's source ignores other formats). A key with a recognised
        extension whose name does not follow the layout raises :class:`LayoutError` naming it.
        """
        prefix = self.topic_prefix()
        if not key.startswith(prefix):
            return None
        rest = key[len(prefix) :]
        parts = rest.split(self.directory_delim)
        filename = parts[-1]
        kind = None
        extension = ""
        for ext, k in sorted(extensions.items(), key=lambda item: -len(item[0])):
            if filename.endswith(ext):
                kind, extension = k, ext
                break
        if kind is None:
            return None
        match = self._name_pattern().match(filename[: len(filename) - len(extension)])
        if not match:
            raise LayoutError(
                f"object {key} is inside {prefix or 'the bucket'} with a {extension} extension but its name is not "
                f"<topic>{self.file_delim}<partition>{self.file_delim}<offset>{extension} under <topic>/"
            )
        return ObjectName(
            key=key,
            topic=match.group("topic"),
            partition=int(match.group("partition")),
            start_offset=int(match.group("offset")),
            directory=self.directory_delim.join(parts[:-1]),
            extension=extension,
            kind=kind,
        )


# ------------------------------------------------------------------------------------- names holding last offsets
def assign_starts(last_offsets: Sequence[int]) -> list[int]:
    """First offsets of one directory's objects from the last offsets their names hold (sorted ascending; layouts
    whose ``names_hold_last_offset``): the previous object's last offset plus one, and 0 for the first object (a
    lower bound: what came before it is not in the bucket, so nothing tells where it starts; the readers take offsets
    from the records or count back from the last one)."""
    starts = []
    previous = -1
    for last in last_offsets:
        starts.append(previous + 1)
        previous = last
    return starts


def with_start(name: ObjectName, start: int) -> ObjectName:
    return dataclasses.replace(name, start_offset=start)
