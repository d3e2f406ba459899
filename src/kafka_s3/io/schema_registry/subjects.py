"""Saving a topic's Schema Registry subjects for the backup, and writing them into a target registry on restore
(:mod:`kafka_s3.core.schemas`).

On restore each subject follows the target registry's mode for it (the subject's own, else the global one):
``IMPORT`` — set by the operator, Confluent allows it only on an empty registry or subject — imports every version
under its source id and version number, so restored payloads keep working as they are; ``READWRITE`` registers the
versions and the target assigns ids (the restore rewrites them in the payloads); ``READONLY`` refuses. kafka-s3 never
switches a mode itself: IMPORT blocks ordinary registrations in its scope, so it is the operator's decision, and
switching modes takes rights a restore principal need not have.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from kafka_s3.core.errors import KafkaS3Error
from kafka_s3.core.schemas import SavedSchemas, SubjectVersion
from kafka_s3.core.stall import logged_wait
from kafka_s3.io.schema_registry.client import (
    DEFAULT_TIMEOUT_S,
    client_config,
    describe,
    is_not_found,
    registry_client,
    registry_url,
)

if TYPE_CHECKING:
    from confluent_kafka.schema_registry import SchemaRegistryClient


log = logging.getLogger(__name__)


class SchemaRegistryError(KafkaS3Error):
    """The Schema Registry refused or failed a request while saving or restoring subjects."""

    exit_code = 4


def registry_for(originals: Mapping[str, Any]) -> SchemaRegistryClient | None:
    """The registry of ``schemas.registry.url``, else of the value (then key) converter's settings; ``None``
    when none is configured. Each request's timeout is ``service.timeout.ms``."""
    timeout_s = _timeout_s(originals)
    url = str(originals.get("schemas.registry.url", "") or "").strip()
    if url:
        return registry_client(client_config({"schema.registry.url": url}, ""), timeout_s)
    for prefix in ("value.converter.", "key.converter."):
        settings = {k[len(prefix) :]: str(v) for k, v in originals.items() if k.startswith(prefix)}
        if str(settings.get("schema.registry.url", "")).strip():
            return registry_client(client_config(settings, prefix), timeout_s)
    return None


def _timeout_s(originals: Mapping[str, Any]) -> float:
    """``service.timeout.ms`` of a configuration's properties, in seconds (its default when not set)."""
    try:
        return max(int(str(originals["service.timeout.ms"]).strip()), 1) / 1000
    except (KeyError, ValueError):  # unset (a parsed configuration has refused a bad value already)
        return DEFAULT_TIMEOUT_S


def _compatibility(client: SchemaRegistryClient, subject: str | None) -> str | None:
    try:
        return str(client.get_compatibility(subject) if subject else client.get_compatibility())
    except Exception as exc:
        if is_not_found(exc):
            return None
        raise


def save_subjects(client: SchemaRegistryClient, topic: str, at: int) -> SavedSchemas:
    """``<topic>-key`` and ``<topic>-value`` (those that exist) and every subject they reference, every version."""
    with logged_wait(f"the Schema Registry at {registry_url(client)} (saving the subjects of topic {topic})", log):
        return _save_subjects(client, topic, at)


def _save_subjects(client: SchemaRegistryClient, topic: str, at: int) -> SavedSchemas:
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
        raise SchemaRegistryError(
            f"saving the Schema Registry subjects of topic {topic} from {registry_url(client)}: {describe(exc)}"
        ) from None
    return SavedSchemas(topic, at, subjects, compatibility)


IMPORT = "IMPORT"
READONLY = "READONLY"
READWRITE = "READWRITE"


@dataclass
class SchemaImport:
    """What ``restore --schemas`` did, or would do: source id -> target id (``None`` in a plan: not in the target
    yet, the target will assign one), each subject's target mode, and the ids an IMPORT would collide with."""

    ids: dict[int, int | None] = field(default_factory=dict)
    modes: dict[str, str] = field(default_factory=dict)
    conflicts: dict[str, list[int]] = field(default_factory=dict)  # subject -> ids held by other schemas


def subject_mode(client: SchemaRegistryClient, subject: str) -> str:
    """The target registry's mode for ``subject``: its own, else the global one (``READWRITE`` for a registry
    without the mode API)."""
    try:
        return str(client.get_mode(subject)).upper()
    except Exception as exc:
        if not is_not_found(exc):  # 40409: no subject-level mode
            raise
    try:
        return str(client.get_global_mode()).upper()
    except Exception as exc:
        if is_not_found(exc):
            return READWRITE
        raise


def _same_schema(a: str, b: str, schema_type: str) -> bool:
    if schema_type in ("AVRO", "JSON"):
        try:
            return bool(json.loads(a) == json.loads(b))
        except ValueError:
            return a == b
    return a == b


def _id_holder(client: SchemaRegistryClient, schema_id: int) -> str | None:
    """The schema text the target registry holds under ``schema_id`` (``None``: the id is free)."""
    try:
        return str(client.get_schema(schema_id).schema_str)
    except Exception as exc:
        if is_not_found(exc):
            return None
        raise


def _import_version(client: SchemaRegistryClient, subject: str, version: SubjectVersion) -> int:
    """``POST /subjects/<subject>/versions`` with the version's own ``id`` and ``version`` (IMPORT mode). The client
    has no method for it (``register_schema`` sends no id), so this goes through the client's REST session, with its
    authentication and TLS settings."""
    body = {
        "schema": version.schema,
        "schemaType": version.schema_type,
        "references": [{"name": n, "subject": s, "version": v} for n, s, v in version.references],
        "id": version.id,
        "version": version.version,
    }
    response = client._rest_client.post(f"subjects/{quote(subject, safe='')}/versions", body=body)
    return int(response["id"])


def import_subjects(client: SchemaRegistryClient, saved: SavedSchemas) -> SchemaImport:
    """Write every saved version into the target registry, referenced subjects first and versions in order: under
    its source id and version where the subject's target mode is IMPORT, else registered (the subject's
    compatibility set to NONE meanwhile). Then each subject gets its saved compatibility level."""
    with logged_wait(f"the Schema Registry at {registry_url(client)} (restoring the subjects of {saved.topic})", log):
        return _import_subjects(client, saved)


def _import_subjects(client: SchemaRegistryClient, saved: SavedSchemas) -> SchemaImport:
    from confluent_kafka.schema_registry import Schema, SchemaReference

    result = SchemaImport()
    subject, current = "", None
    try:
        for subject in sorted(saved.subjects):
            mode = result.modes[subject] = subject_mode(client, subject)
            if mode == READONLY:
                raise SchemaRegistryError(
                    f"subject {subject!r} is READONLY in the target registry: restore --schemas cannot write it "
                    "(set its mode to IMPORT to keep the source's ids, or READWRITE)"
                )
        held = [
            f"version {v.version} (id {v.id}) of subject {s!r}"
            for s, v in saved.registration_order()
            if result.modes[s] == IMPORT
            and (text := _id_holder(client, v.id)) is not None
            and not _same_schema(text, v.schema, v.schema_type)
        ]
        if held:
            raise SchemaRegistryError(
                f"cannot import {', '.join(held)} into the target registry (IMPORT mode): another schema holds that "
                "id there; nothing was written (empty the registry, or restore without IMPORT mode: the ids are "
                "then rewritten in the payloads)"
            )
        for subject in sorted(saved.subjects):
            if result.modes[subject] != IMPORT:
                client.set_compatibility(subject, "NONE")
        for subject, current in saved.registration_order():
            if result.modes[subject] == IMPORT:
                result.ids[current.id] = _import_version(client, subject, current)
            else:
                references = [SchemaReference(name, ref, number) for name, ref, number in current.references]
                schema = Schema(current.schema, current.schema_type, references)
                result.ids[current.id] = int(client.register_schema(subject, schema))
        current = None
        for subject in sorted(saved.subjects):
            client.set_compatibility(subject, saved.compatibility.get(subject, saved.compatibility.get("", "BACKWARD")))
    except KafkaS3Error:
        raise
    except Exception as exc:
        what = f"version {current.version} (id {current.id}) of subject {subject!r}" if current else f"{subject!r}"
        how = f"importing {what} into" if current and result.modes.get(subject) == IMPORT else f"registering {what} in"
        raise SchemaRegistryError(f"{how} the target registry at {registry_url(client)}: {describe(exc)}") from None
    return result


def predict_ids(client: SchemaRegistryClient, saved: SavedSchemas) -> SchemaImport:
    """Dry run: each subject's target mode, and source id -> the id the version will have in the target registry:
    the one it already holds it under, the source's own in IMPORT mode (unless another schema holds that id there:
    a conflict), else ``None`` (registered, the target assigns one)."""
    with logged_wait(f"the Schema Registry at {registry_url(client)} (looking up the subjects of {saved.topic})", log):
        return _predict_ids(client, saved)


def _predict_ids(client: SchemaRegistryClient, saved: SavedSchemas) -> SchemaImport:
    from confluent_kafka.schema_registry import Schema, SchemaReference

    out = SchemaImport()
    subject = ""
    try:
        for subject in sorted(saved.subjects):
            out.modes[subject] = subject_mode(client, subject)
        for subject, version in saved.registration_order():
            references = [SchemaReference(name, ref, number) for name, ref, number in version.references]
            try:
                found = client.lookup_schema(subject, Schema(version.schema, version.schema_type, references))
                out.ids[version.id] = int(found.schema_id) if found.schema_id is not None else None
                continue
            except Exception as exc:
                if not is_not_found(exc):
                    raise
            out.ids[version.id] = None
            if out.modes[subject] == IMPORT:
                held = _id_holder(client, version.id)
                if held is None or _same_schema(held, version.schema, version.schema_type):
                    out.ids[version.id] = version.id
                else:
                    out.conflicts.setdefault(subject, []).append(version.id)
    except Exception as exc:
        raise SchemaRegistryError(
            f"looking subject {subject!r} up in the target registry at {registry_url(client)}: {describe(exc)}"
        ) from None
    return out
