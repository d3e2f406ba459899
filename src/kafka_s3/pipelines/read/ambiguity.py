"""Objects whose records cannot be given back one by one, as their chunk manifests record them.

ByteArrayFormat writes each value followed by a separator: a value holding the separator reads back as several
records, and a tombstone as an empty value. The backup counts such records per file (``FileEntry.ambiguous``); a
restore refuses those objects instead of guessing, before producing anything (from the manifests its plan reads
anyway).
"""

from __future__ import annotations

from collections.abc import Iterable

from kafka_s3.core.errors import PlanError
from kafka_s3.core.manifest import PartitionManifests
from kafka_s3.pipelines.read.discovery import TP, SourcePartition


def ambiguous_objects(
    partitions: dict[TP, SourcePartition], manifests: Iterable[PartitionManifests]
) -> list[tuple[str, int]]:
    """``(object key, records)`` of every listed object (data or sidecar) its chunk manifest says holds records that
    cannot be read back one by one."""
    keys = {
        key
        for part in partitions.values()
        for obj in part.objects
        for key in (obj.key, obj.keys_key)
        if key is not None
    }
    return sorted(
        (f.key, f.ambiguous) for pm in manifests for m in pm.chunks for f in m.files if f.ambiguous and f.key in keys
    )


def refuse_ambiguous(partitions: dict[TP, SourcePartition], manifests: Iterable[PartitionManifests]) -> None:
    """Raise :class:`PlanError` naming every object (and its count) whose records cannot be restored one by one."""
    found = ambiguous_objects(partitions, manifests)
    if not found:
        return
    listed = "; ".join(f"{key} holds {n} record{'s' if n != 1 else ''}" for key, n in found[:5])
    more = f" (and {len(found) - 5} more objects)" if len(found) > 5 else ""
    raise PlanError(
        f"{listed}{more} that cannot be restored one by one: ByteArrayFormat wrote values (or keys) holding "
        "format.bytearray.separator, or tombstones as empty records (Lenses' CSV and TEXT: values holding a line "
        "break; Lenses' BYTES: tombstones), so their records cannot be given back as written "
        "(the backup warned and counted them in its chunk manifests). Restore refuses to guess: nothing was "
        "produced. Remove these objects from the restore (--topics, --from-offset/--until-offset), or back the "
        "topic up again with format.class=avro, parquet or json (or store.envelope=true)"
    )
