"""Objects whose records cannot be given back one by one, as their chunk manifests record them.

ByteArrayFormat writes each value followed by a separator: a value holding the separator reads back as several
records, and a tombstone as an empty value. The backup counts such records per file (``FileEntry.ambiguous``); a
restore refuses those objects instead of guessing, before producing anything. Only formats that do not frame every
record (:attr:`Format.frames_records` false) are checked, so other backups read no manifest here.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from kafka_s3.core.errors import PlanError
from kafka_s3.core.manifest import EXTENSION, Manifest
from kafka_s3.core.store import Store
from kafka_s3.pipelines.read.discovery import TP, SourcePartition
from kafka_s3.pipelines.read.plugins import ReadPlugins


def ambiguous_objects(
    store: Store, plugins: ReadPlugins, partitions: dict[TP, SourcePartition]
) -> list[tuple[str, int]]:
    """``(object key, records)`` of every listed object (data or sidecar) its chunk manifest says holds records that
    cannot be read back one by one."""
    if plugins.value_format.frames_records and plugins.keys_format.frames_records:
        return []
    manifests = plugins.manifests(store)
    keys = {
        key
        for part in partitions.values()
        for obj in part.objects
        for key in (obj.key, obj.keys_key)
        if key is not None
    }

    def chunks(tp: TP) -> list[str]:
        prefix = manifests.prefix(*tp)
        return [info.key for info in store.list(prefix) if info.key.endswith(EXTENSION)]

    def entries(key: str) -> list[tuple[str, int]]:
        manifest = Manifest.from_bytes(store.get(key), key)
        return [(f.key, f.ambiguous) for f in manifest.files if f.ambiguous]

    seen = plugins.ambiguity_seen
    with ThreadPoolExecutor(max_workers=16) as pool:
        chunk_keys = [key for listing in pool.map(chunks, partitions) for key in listing]
        new = [key for key in chunk_keys if key not in seen]
        seen.update(zip(new, pool.map(entries, new), strict=True))
    return sorted(entry for key in chunk_keys for entry in seen[key] if entry[0] in keys)


def refuse_ambiguous(store: Store, plugins: ReadPlugins, partitions: dict[TP, SourcePartition]) -> None:
    """Raise :class:`PlanError` naming every object (and its count) whose records cannot be restored one by one."""
    found = ambiguous_objects(store, plugins, partitions)
    if not found:
        return
    listed = "; ".join(f"{key} holds {n} record{'s' if n != 1 else ''}" for key, n in found[:5])
    more = f" (and {len(found) - 5} more objects)" if len(found) > 5 else ""
    raise PlanError(
        f"{listed}{more} that cannot be restored one by one: ByteArrayFormat wrote values (or keys) holding "
        "format.bytearray.separator, or tombstones as empty records, so their records cannot be split apart again "
        "(the backup warned and counted them in its chunk manifests). Restore refuses to guess: nothing was "
        "produced. Remove these objects from the restore (--topics, --from-offset/--until-offset), or back the "
        "topic up again with format.class=avro, parquet or json (or store.envelope=true)"
    )
