"""Schema evolution: what ``schema.compatibility`` does when a record's schema differs from its file's, and the
projection of values to another schema. Pure: no Spark, no network.

Confluent's S3 sink (``StorageSchemaCompatibility`` in kafka-connect-storage-common) keeps, per encoded partition of
the open chunk, the schema of the file being written (the schema of its first record) and checks every record:

- ``NONE``: any other schema rolls the file (commits the chunk; the record starts new files);
- ``BACKWARD`` and ``FULL``: a *newer* version rolls (the newer schema becomes the file schema); an older or equal one
  is projected to the file's schema, so the files hold the latest schema seen;
- ``FORWARD``: an *older* version rolls; a newer or equal one is projected to the file's (older) schema.

:func:`decide` is that rule. Versions are Schema Registry versions (AvroConverter) or the Connect schema's
``version`` (JsonConverter). Two differences from Confluent, both keeping backups running where Confluent's task
stops: a record whose schema cannot be projected to the file's (e.g. a promoted type under FORWARD, a record of
another name) rolls the file instead of failing the task, and versions are only required when two *different*
schemas meet (Confluent fails on any record without a version in these modes).

:func:`project` is Avro's schema resolution (the reader's schema = the file's) applied to whole Arrow columns:
fields matched by name (or the reader field's aliases), fields the writer lacks take the reader's default (or null
when optional), fields the reader lacks are dropped, numbers promoted (int → long → float → double), string ↔ bytes,
enum symbols the reader lacks take the reader's default symbol, unions resolved branch by branch.
:func:`projection_problem` says statically (from the schemas only) whether a projection can succeed, so a roll never
depends on the values and the cuts stay deterministic.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kafka_s3.core.converters.avro_data import (
    default_value,
    expand,
    is_general_union,
    is_map_entry,
    logical_type,
    member_name,
    non_null,
    nullable,
    type_name,
)
from kafka_s3.core.converters.base import Logical, ValueSchema
from kafka_s3.core.converters.connect_schema import SchemaError
from kafka_s3.core.errors import ConversionError


class Compatibility(StrEnum):
    NONE = "NONE"
    BACKWARD = "BACKWARD"
    FORWARD = "FORWARD"
    FULL = "FULL"


class Decision(StrEnum):
    SAME = "same"  # the file's schema: write as is
    PROJECT = "project"  # write the record projected to the file's schema
    ROLL = "roll"  # commit the chunk before the record; its schema starts new files


class SchemaVersionRequired(ConversionError):
    """Two different schemas met under BACKWARD/FORWARD/FULL, and one has no version to order them by."""


def decide(
    mode: Compatibility | str,
    current: ValueSchema,
    incoming: ValueSchema,
    projectable: Callable[[ValueSchema, ValueSchema], bool] | None = None,
) -> Decision:
    """What a record of schema ``incoming`` does to a file whose schema is ``current`` (see the module docstring).

    ``projectable(source, target)`` defaults to :func:`can_project`.
    """
    mode = Compatibility(mode)
    if current.fingerprint == incoming.fingerprint:
        return Decision.SAME
    if mode is Compatibility.NONE:
        return Decision.ROLL
    for schema in (current, incoming):
        if schema.version is None:
            raise SchemaVersionRequired(
                f"schema.compatibility={mode.value} needs schema versions to order schemas, but the schema "
                f"{schema.name or schema.fingerprint[:12]} has none (Schema Registry versions come with "
                'AvroConverter; JsonConverter takes the Connect schema\'s "version"); use schema.compatibility=NONE '
                "for unversioned schemas"
            )
    incoming_version, current_version = incoming.version, current.version
    assert incoming_version is not None and current_version is not None  # checked just above
    if mode is Compatibility.FORWARD:
        if incoming_version < current_version:
            return Decision.ROLL
    elif incoming_version > current_version:  # BACKWARD, FULL
        return Decision.ROLL
    return Decision.PROJECT if (projectable or can_project)(incoming, current) else Decision.ROLL


# ------------------------------------------------------------------------------------------------- static check
_PROBLEMS: dict[tuple[str, str], str | None] = {}


def can_project(source: ValueSchema, target: ValueSchema) -> bool:
    return projection_problem(source, target) is None


def projection_problem(source: ValueSchema, target: ValueSchema) -> str | None:
    """Why values of ``source`` cannot be read with ``target`` (Avro schema resolution), or ``None`` if they can."""
    key = (source.fingerprint, target.fingerprint)
    if key not in _PROBLEMS:
        try:
            problem = _problem(expand(source.avro), expand(target.avro), "value")
        except SchemaError as exc:
            problem = str(exc)
        if len(_PROBLEMS) > 4096:
            _PROBLEMS.clear()
        _PROBLEMS[key] = problem
    return _PROBLEMS[key]


PROMOTIONS = {
    "int": ("int", "long", "float", "double"),
    "long": ("long", "float", "double"),
    "float": ("float", "double"),
    "string": ("string", "bytes"),
    "bytes": ("bytes", "string"),
}
TEMPORAL = ("date", "time-millis", "time-micros")


def _short(name: str) -> str:
    return name.rpartition(".")[2]


def _same_name(src: dict[str, Any], dst: dict[str, Any]) -> bool:
    """Named types match by unqualified name, or by one of the reader's aliases."""
    names = {_short(dst["name"])} | {_short(a) for a in dst.get("aliases", ())}
    return _short(src["name"]) in names


def _branch_for(src: Any, branches: list[Any]) -> int | None:
    """The reader branch a writer's value resolves to: the first of the same type, else the first it promotes to."""
    same = [
        i
        for i, b in enumerate(branches)
        if type_name(b) == type_name(src) and (type_name(b) not in ("record", "enum", "fixed") or _same_name(src, b))
    ]
    for i in same + [i for i in range(len(branches)) if i not in same]:
        if _problem(src, branches[i], "") is None:
            return i
    return None


def _problem(src: Any, dst: Any, path: str) -> str | None:
    if isinstance(dst, list):
        dst_branches = non_null(dst)
        src_branches = non_null(src) if isinstance(src, list) else ([] if src == "null" else [src])
        if nullable(src) and "null" not in dst:
            return f"{path} may be null in the record's schema but not in the file's"
        for branch in src_branches:
            if _branch_for(branch, dst_branches) is None:
                return f"{path}: {type_name(branch)} matches no branch of the file's union"
        return None
    if isinstance(src, list):
        if nullable(src) and dst != "null":
            return f"{path} may be null in the record's schema but not in the file's"
        return next((p for p in (_problem(b, dst, path) for b in non_null(src)) if p), None)
    src_type, dst_type = type_name(src), type_name(dst)
    src_logical, dst_logical = logical_type(src), logical_type(dst)
    if "decimal" in (src_logical, dst_logical):
        if src_logical != dst_logical or src_type != dst_type:
            return f"{path}: {src_logical or src_type} cannot be read as {dst_logical or dst_type}"
        if int(src.get("scale", 0)) != int(dst.get("scale", 0)) or int(dst["precision"]) < int(src["precision"]):
            return (
                f"{path}: decimal({src['precision']},{src.get('scale', 0)}) cannot be read as "
                f"decimal({dst['precision']},{dst.get('scale', 0)})"
            )
        if src_type == "fixed" and (not _same_name(src, dst) or src["size"] != dst["size"]):
            return f"{path}: fixed {src['name']} cannot be read as fixed {dst['name']}"
        return None
    if src_type in ("record", "enum", "fixed") or dst_type in ("record", "enum", "fixed"):
        if src_type != dst_type:
            return f"{path}: {src_type} cannot be read as {dst_type}"
        if not _same_name(src, dst):
            return f"{path}: {src_type} {src['name']} cannot be read as {dst['name']}"
        if src_type == "fixed" and src["size"] != dst["size"]:
            return f"{path}: fixed of {src['size']} bytes cannot be read as {dst['size']} bytes"
        if src_type == "enum":
            missing = [s for s in src["symbols"] if s not in dst["symbols"]]
            if missing and "default" not in dst:
                return f"{path}: enum symbols {missing} are not in the file's enum, which has no default"
        if src_type == "record":
            return _record_problem(src, dst, path)
        return None
    if src_type == "array" and dst_type == "array":
        if is_map_entry(src["items"]) != is_map_entry(dst["items"]):
            return f"{path}: a map cannot be read as an array"
        if is_map_entry(src["items"]):
            return _record_problem(src["items"], dst["items"], f"{path}[]")
        return _problem(src["items"], dst["items"], f"{path}[]")
    if src_type == "map" and dst_type == "map":
        return _problem(src["values"], dst["values"], f"{path}[]")
    if src_type in ("array", "map") or dst_type in ("array", "map"):
        return f"{path}: {src_type} cannot be read as {dst_type}"
    if dst_type not in PROMOTIONS.get(src_type, (src_type,)):
        return f"{path}: {src_type} cannot be read as {dst_type}"
    if (src_logical in TEMPORAL or dst_logical in TEMPORAL) and src_logical != dst_logical:
        return f"{path}: {src_logical or src_type} cannot be read as {dst_logical or dst_type}"
    return None


def _record_problem(src: dict[str, Any], dst: dict[str, Any], path: str) -> str | None:
    fields = {f["name"]: f for f in src["fields"]}
    for field in dst["fields"]:
        child = f"{path}.{field['name']}"
        source = _source_field(fields, field)
        if source is not None:
            problem = _problem(source["type"], field["type"], child)
            if problem:
                return problem
        elif "default" in field:
            try:
                default_value(field["type"], field["default"])
            except SchemaError as exc:
                return f"{child}: {exc}"
        elif not nullable(field["type"]):
            return f"{child} is not in the record's schema and the file's schema gives it no default"
    return None


def _source_field(fields: dict[str, dict[str, Any]], field: dict[str, Any]) -> dict[str, Any] | None:
    for name in [field["name"], *field.get("aliases", ())]:
        if name in fields:
            return fields[name]
    return None


# ---------------------------------------------------------------------------------------------------- projection
def project(values: Logical, target: ValueSchema) -> Logical:
    """``values`` (of another schema) read with the ``target`` schema. Raises :class:`ConversionError` when they
    cannot be (check :func:`projection_problem` first: then only values that do not fit, e.g. a promoted long too
    large for a float, can fail)."""
    source = values.schema
    if source is None or source.fingerprint == target.fingerprint:
        return values
    if source.avro == "null":  # a run of tombstones only: nulls of the target's type
        return Logical("struct", pa.array([None] * len(values), target.arrow), target)
    problem = projection_problem(source, target)
    if problem:
        raise ConversionError(f"values of schema {source.name or 'value'} cannot be projected to the file's: {problem}")
    array = _project(values.array, expand(source.avro), expand(target.avro), target.arrow, "value")
    return Logical("struct", array, target)


def _mask(array: pa.Array) -> pa.Array | None:
    return array.is_null() if array.null_count else None


def _project(array: pa.Array, src: Any, dst: Any, arrow: pa.DataType, path: str) -> pa.Array:
    if is_general_union(dst):
        return _into_union(array, src, non_null(dst), arrow, path)
    dst_plain = non_null(dst)[0] if isinstance(dst, list) else dst
    if is_general_union(src):
        members = non_null(src)
        result = pa.nulls(len(array), arrow)
        for branch in members:  # exactly one member is set: the first projected one that is wins
            result = pc.coalesce(result, _project(array.field(member_name(branch)), branch, dst_plain, arrow, path))
        return result if array.null_count == 0 else pc.if_else(array.is_null(), pa.nulls(len(array), arrow), result)
    src_plain = (non_null(src) or ["null"])[0] if isinstance(src, list) else src
    if src_plain == "null":
        return pa.nulls(len(array), arrow)
    return _project_plain(array, src_plain, dst_plain, arrow, path)


def _into_union(array: pa.Array, src: Any, branches: list[Any], arrow: pa.DataType, path: str) -> pa.Array:
    """Values into a union of several types (a struct of members)."""
    n = len(array)
    members: list[pa.Array | None] = [None] * len(branches)
    if is_general_union(src):
        for branch in non_null(src):
            index = _branch_for(branch, branches)
            assert index is not None  # projection_problem found a branch for every member
            projected = _project(
                array.field(member_name(branch)), branch, branches[index], arrow.field(index).type, path
            )
            members[index] = projected if members[index] is None else pc.coalesce(members[index], projected)
    else:
        plain = (non_null(src) or ["null"])[0] if isinstance(src, list) else src
        if plain != "null":
            index = _branch_for(plain, branches)
            assert index is not None  # projection_problem found a branch for it
            members[index] = _project_plain(array, plain, branches[index], arrow.field(index).type, path)
    children = [m if m is not None else pa.nulls(n, arrow.field(i).type) for i, m in enumerate(members)]
    return pa.StructArray.from_arrays(children, fields=list(arrow), mask=_mask(array))


def _project_plain(array: pa.Array, src: Any, dst: Any, arrow: pa.DataType, path: str) -> pa.Array:
    if src == dst and array.type.equals(arrow):
        return array
    typ = type_name(dst)
    if typ == "record":
        return _record(array, src, dst, arrow, path)
    if typ == "array" and pa.types.is_map(arrow):  # AvroData's map with non-string keys
        (key_src, value_src), (key_dst, value_dst) = src["items"]["fields"], dst["items"]["fields"]
        return _map(array, key_src["type"], key_dst["type"], value_src["type"], value_dst["type"], arrow, path)
    if typ == "map":
        return _map(array, "string", "string", src["values"], dst["values"], arrow, path)
    if typ == "array":
        offsets, values = _list_parts(array)
        items = _project(values, src["items"], dst["items"], arrow.value_type, f"{path}[]")
        return pa.ListArray.from_arrays(offsets, items, type=arrow, mask=_mask(array))
    if typ == "enum":
        unknown = pc.invert(pc.is_in(array, value_set=pa.array(dst["symbols"], pa.string())))
        if pc.any(pc.and_(unknown, array.is_valid())).as_py():
            if "default" not in dst:
                bad = array.filter(pc.and_(unknown, array.is_valid()))[0].as_py()
                raise ConversionError(f"{path}: {bad!r} is not a symbol of the file's enum {dst['name']}")
            array = pc.if_else(unknown, pa.scalar(dst["default"], pa.string()), array)
        return array.cast(arrow)
    return _cast(array, arrow, path)


def _cast(array: pa.Array, arrow: pa.DataType, path: str) -> pa.Array:
    if array.type.equals(arrow):
        return array
    numeric = pa.types.is_integer(array.type) or pa.types.is_floating(array.type)
    try:
        # Avro's promotions may lose precision (long → float); text must stay valid UTF-8.
        return array.cast(arrow, safe=not (numeric and pa.types.is_floating(arrow)))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise ConversionError(f"{path}: cannot read {array.type} values as {arrow}: {exc}") from None


def _record(array: pa.Array, src: dict[str, Any], dst: dict[str, Any], arrow: pa.DataType, path: str) -> pa.Array:
    n = len(array)
    fields = {f["name"]: f for f in src["fields"]}
    children = []
    for i, field in enumerate(dst["fields"]):
        child_type = arrow.field(i).type
        child_path = f"{path}.{field['name']}"
        source = _source_field(fields, field)
        if source is not None:
            children.append(
                _project(array.field(source["name"]), source["type"], field["type"], child_type, child_path)
            )
        elif "default" in field:
            children.append(_repeat(default_value(field["type"], field["default"]), child_type, n))
        else:
            children.append(pa.nulls(n, child_type))
    if not children:  # a record without fields
        return pa.array([{} if valid else None for valid in array.is_valid().to_pylist()], arrow)
    return pa.StructArray.from_arrays(children, fields=list(arrow), mask=_mask(array))


def _repeat(value: Any, arrow: pa.DataType, n: int) -> pa.Array:
    return pa.repeat(pa.scalar(value, arrow), n) if n else pa.array([], arrow)


def _list_parts(array: pa.Array) -> tuple[pa.Array, pa.Array]:
    """Offsets from 0 and the child values of a list array, cut to the array's slice."""
    offsets = np.asarray(array.offsets).astype(np.int32)
    start, stop = int(offsets[0]), int(offsets[-1])
    return pa.array(offsets - start, pa.int32()), array.values.slice(start, stop - start)


def _map(
    array: pa.Array, key_src: Any, key_dst: Any, value_src: Any, value_dst: Any, arrow: pa.DataType, path: str
) -> pa.Array:
    offsets = np.asarray(array.offsets).astype(np.int32)
    start, stop = int(offsets[0]), int(offsets[-1])
    keys = _project(array.keys.slice(start, stop - start), key_src, key_dst, arrow.key_type, f"{path}.key")
    items = _project(array.items.slice(start, stop - start), value_src, value_dst, arrow.item_type, f"{path}[]")
    return pa.MapArray.from_arrays(pa.array(offsets - start, pa.int32()), keys, items, type=arrow, mask=_mask(array))


# ----------------------------------------------------------------------------------------------------- the judge
class SchemaJudge:
    """Applies ``schema.compatibility`` to the schemas a backup meets, by fingerprint (what the rotator sees).

    ``learn`` the schemas of each batch's runs; ``rolls(current, incoming)`` tells the rotator whether a record of
    ``incoming`` rolls a file of ``current``; ``project`` brings values to their file's schema. Decisions and
    projection checks are cached per pair of fingerprints.
    """

    def __init__(self, mode: Compatibility | str = Compatibility.NONE):
        self.mode = Compatibility(mode)
        self.schemas: dict[str, ValueSchema] = {}
        self._decisions: dict[tuple[str, str], Decision] = {}

    def learn(self, schema: ValueSchema | None) -> None:
        if schema is not None and schema.avro != "null":
            self.schemas.setdefault(schema.fingerprint, schema)

    def decision(self, current: str, incoming: str) -> Decision:
        key = (current, incoming)
        decision = self._decisions.get(key)
        if decision is None:
            if current == incoming:
                decision = Decision.SAME
            elif current not in self.schemas or incoming not in self.schemas:
                decision = Decision.ROLL  # schemaless values (or bytes) on one side: never projected
            else:
                decision = decide(self.mode, self.schemas[current], self.schemas[incoming])
            self._decisions[key] = decision
        return decision

    def rolls(self, current: str, incoming: str) -> bool:
        return self.decision(current, incoming) is Decision.ROLL
