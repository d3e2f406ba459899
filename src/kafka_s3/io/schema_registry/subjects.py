"""Saving a topic's Schema Registry subjects for the backup, and registering them in a target registry on restore
(:mod:`kafka_s3.core.schemas`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from kafka_s3.core.errors import KafkaS3Error
from kafka_s3.core.schemas import SavedSchemas, SubjectVersion
from kafka_s3.io.schema_registry.client import client_config, describe, is_not_found, registry_client

if TYPE_CHECKING:
    from confluent_kafka.schema_registry import SchemaRegistryClient


class SchemaRegistryError(KafkaS3Error):
    """The Schema Registry refused or failed a request while saving or restoring subjects."""

    exit_code = 4


def registry_for(originals: Mapping[str, Any]) -> SchemaRegistryClient | None:
    """The registry of ``schemas.registry.url``, else of the value (then key) converter's settings; ``None``
    when none is configured."""
    url = str(originals.get("schemas.registry.url", "") or "").strip()
    if url:
        return registry_client(client_config({"schema.registry.url": url}, ""))
    for prefix in ("value.converter.", "key.converter."):
        settings = {k[len(prefix) :]: str(v) for k, v in originals.items() if k.startswith(prefix)}
        if str(settings.get("schema.registry.url", "")).strip():
            return registry_client(client_config(settings, prefix))
    return None


def _compatibility(client: SchemaRegistryClient, subject: str | None) -> str | None:
    try:
        return str(client.get_compatibility(subject) if subject else client.get_compatibility())
    except Exception as exc:
        if is_not_found(exc):
            return None
        raise


def save_subjects(client: SchemaRegistryClient, topic: str, at: int) -> SavedSchemas:
    """``<topic>-key`` and ``<topic>-value`` (those that exist) and every subject they reference, every version."""
    try:
        existing = set(client.get_subjects())
        pending = [s for s in (f"{topic}-key", f"{topic}-value") if s in existing]
        subjects: dict[str, tuple[SubjectVersion, ...]] = {}
        while pending:
            subject = pending.pop()
            if subject in subjects:
                continue
            versions = []
            for number in client.get_versions(subject):
                registered = client.get_version(subject, number)
                schema = registered.schema
                references = tuple((str(r.name), str(r.subject), int(r.version or 0)) for r in schema.references or [])
                versions.append(
                    SubjectVersion(
                        int(number),
                        int(registered.schema_id or 0),
                        str(schema.schema_str),
                        str(schema.schema_type or "AVRO"),
                        references,
                    )
                )
                pending.extend(r[1] for r in references)
            subjects[subject] = tuple(versions)
        compatibility = {s: level for s in sorted(subjects) if (level := _compatibility(client, s)) is not None}
        overall = _compatibility(client, None)
        if overall is not None:
            compatibility[""] = overall
    except KafkaS3Error:
        raise
    except Exception as exc:
        raise SchemaRegistryError(f"saving the Schema Registry subjects of topic {topic}: {describe(exc)}") from None
    return SavedSchemas(topic, at, subjects, compatibility)


def import_subjects(client: SchemaRegistryClient, saved: SavedSchemas) -> dict[int, int]:
    """Register every saved version in the target registry (referenced subjects first, versions in order; the
    subject's compatibility set to NONE meanwhile, then to the saved level). Returns source id -> target id."""
    from confluent_kafka.schema_registry import Schema, SchemaReference

    ids: dict[int, int] = {}
    subject = ""
    try:
        for subject in sorted(saved.subjects):
            client.set_compatibility(subject, "NONE")
        for subject, version in saved.registration_order():
            references = [SchemaReference(name, ref, number) for name, ref, number in version.references]
            schema = Schema(version.schema, version.schema_type, references)
            ids[version.id] = int(client.register_schema(subject, schema))
        for subject in sorted(saved.subjects):
            client.set_compatibility(subject, saved.compatibility.get(subject, saved.compatibility.get("", "BACKWARD")))
    except Exception as exc:
        raise SchemaRegistryError(f"registering subject {subject!r} in the target registry: {describe(exc)}") from None
    return ids


def predict_ids(client: SchemaRegistryClient, saved: SavedSchemas) -> dict[int, int | None]:
    """Dry run: source id -> the id the target registry already holds that version under (``None``: not there yet,
    ``restore --schemas`` registers it and the target assigns an id)."""
    from confluent_kafka.schema_registry import Schema, SchemaReference

    out: dict[int, int | None] = {}
    for subject, version in saved.registration_order():
        references = [SchemaReference(name, ref, number) for name, ref, number in version.references]
        try:
            found = client.lookup_schema(subject, Schema(version.schema, version.schema_type, references))
            out[version.id] = int(found.schema_id) if found.schema_id is not None else None
        except Exception as exc:
            if not is_not_found(exc):
                raise SchemaRegistryError(
                    f"looking subject {subject!r} up in the target registry: {describe(exc)}"
                ) from None
            out[version.id] = None
    return out
