"""Schema Registry subjects in the backup, and the schema-id rewrite of restored payloads.

The backup saves, when a registry is configured (``schemas.registry.url``, else the value or key converter's
``schema.registry.url``), the subjects its topics use — ``<topic>-key`` and ``<topic>-value`` (TopicNameStrategy) and
every subject they reference — with every version, id, schema type and references, and the compatibility settings:
one immutable object ``<manifest root>/<topic>/schemas/<at ms>.schemas`` whenever they changed.

``restore --schemas`` registers them, version by version, in the target registry. Where the target gives a schema
another id than the source had, the restore rewrites the id in each restored key and value in Confluent's wire
format (magic byte 0, 4-byte big-endian id) so that consumers decode them with the target registry.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kafka_s3.core.errors import FormatError
from kafka_s3.core.snapshots import Series

SCHEMAS_DIR = "schemas"
SCHEMAS_EXTENSION = ".schemas"


@dataclass(frozen=True)
class SubjectVersion:
    version: int
    id: int
    schema: str
    schema_type: str = "AVRO"
    references: tuple[tuple[str, str, int], ...] = ()  # (name, subject, version)


@dataclass(frozen=True)
class SavedSchemas:
    topic: str
    at: int
    subjects: dict[str, tuple[SubjectVersion, ...]] = field(default_factory=dict)
    compatibility: dict[str, str] = field(default_factory=dict)  # subject ("" = global) -> level

    def to_bytes(self) -> bytes:
        doc: dict[str, Any] = {
            "topic": self.topic,
            "at": self.at,
            "compatibility": dict(self.compatibility),
            "subjects": {
                s: [
                    {
                        "version": v.version,
                        "id": v.id,
                        "schema": v.schema,
                        "schemaType": v.schema_type,
                        "references": [{"name": n, "subject": rs, "version": rv} for n, rs, rv in v.references],
                    }
                    for v in versions
                ]
                for s, versions in self.subjects.items()
            },
        }
        return json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()

    @classmethod
    def from_bytes(cls, data: bytes, key: str = "") -> SavedSchemas:
        try:
            doc = json.loads(data)
            subjects = {
                str(s): tuple(
                    SubjectVersion(
                        int(v["version"]),
                        int(v["id"]),
                        str(v["schema"]),
                        str(v.get("schemaType") or "AVRO"),
                        tuple((str(r["name"]), str(r["subject"]), int(r["version"])) for r in v.get("references", [])),
                    )
                    for v in versions
                )
                for s, versions in doc["subjects"].items()
            }
            compatibility = {str(k): str(v) for k, v in doc.get("compatibility", {}).items()}
            return cls(str(doc["topic"]), int(doc["at"]), subjects, compatibility)
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            raise FormatError(f"unreadable schema record: {exc}", object_key=key) from None

    def same_as(self, other: SavedSchemas | None) -> bool:
        return other is not None and (other.subjects, other.compatibility) == (self.subjects, self.compatibility)

    def registration_order(self) -> list[tuple[str, SubjectVersion]]:
        """Every (subject, version) with referenced subjects' versions before the versions referencing them."""
        done: set[tuple[str, int]] = set()
        out: list[tuple[str, SubjectVersion]] = []

        def visit(subject: str, version: SubjectVersion) -> None:
            if (subject, version.version) in done:
                return
            done.add((subject, version.version))
            for _, ref_subject, ref_version in version.references:
                for candidate in self.subjects.get(ref_subject, ()):
                    if candidate.version == ref_version:
                        visit(ref_subject, candidate)
            out.append((subject, version))

        for subject in sorted(self.subjects):
            for version in sorted(self.subjects[subject], key=lambda v: v.version):
                visit(subject, version)
        return out


SERIES = Series(SCHEMAS_DIR, SCHEMAS_EXTENSION, SavedSchemas.from_bytes)


def rewrite_schema_id(data: bytes | None, ids: Mapping[int, int]) -> bytes | None:
    """``data`` with its wire-format schema id replaced by ``ids[old]`` (unchanged when it is not in the wire format
    or its id is not in ``ids``)."""
    if data is None or len(data) < 5 or data[0] != 0:
        return data
    (old,) = struct.unpack(">I", data[1:5])
    new = ids.get(old)
    if new is None or new == old:
        return data
    return b"\x00" + struct.pack(">I", new) + data[5:]
