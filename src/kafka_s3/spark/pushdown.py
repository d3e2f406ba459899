"""Filters Spark pushes down to ``spark.read.format("kafka-s3")``, as a :class:`~kafka_s3.pipelines.read.planning
.Selection` of topics, partitions, offsets and record times.

Filters on ``topic``, ``partition`` and ``offset`` (``=``, ``<=>``, ``IN``, ``<``, ``<=``, ``>``, ``>=``,
``<>``/``NOT IN`` on the integer columns, ``IS NOT NULL``) are handled: the reader plans only the partitions and
objects that can hold matching records and drops the other rows itself. Filters on ``timestamp`` (the same
comparisons, with a time zone: Spark's ``timestamp`` literals carry one) only choose objects by the record times
their manifests recorded; Spark still applies them to the rows, as every filter not named here.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from typing import Any

from pyspark.sql.datasource import (
    EqualNullSafe,
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNotNull,
    LessThan,
    LessThanOrEqual,
    Not,
)

from kafka_s3.pipelines.read.planning import HIGH, LOW, Ranges, Selection

EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
NEVER_NULL = {"topic", "partition", "offset"}


def micros(value: Any) -> int | None:
    """A timestamp literal as microseconds since the epoch; ``None`` for anything else (a time without a zone
    cannot be placed)."""
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        return (value - EPOCH) // dt.timedelta(microseconds=1)
    return None


def _integer(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _ranges(f: Filter, number: Any) -> Ranges | None:
    """The integers ``f`` lets through, ``number`` turning its literal(s) into integers (``None``: not one)."""
    if isinstance(f, (EqualTo, EqualNullSafe)):
        v = number(f.value)
        return None if v is None else Ranges.values([v])
    if isinstance(f, In):
        values = [number(v) for v in f.value if v is not None]
        return None if any(v is None for v in values) else Ranges.values(v for v in values if v is not None)
    bound = number(getattr(f, "value", None))
    if bound is None:
        return None
    if isinstance(f, GreaterThan):
        return Ranges.of([(bound + 1, HIGH)])
    if isinstance(f, GreaterThanOrEqual):
        return Ranges.of([(bound, HIGH)])
    if isinstance(f, LessThan):
        return Ranges.of([(LOW, bound)])
    if isinstance(f, LessThanOrEqual):
        return Ranges.of([(LOW, bound + 1)])
    return None


def _complement(ranges: Ranges) -> Ranges:
    edges = [LOW] + [edge for span in ranges.spans for edge in span] + [HIGH]
    return Ranges.of(zip(edges[0::2], edges[1::2], strict=True))


def _column(f: Filter) -> str | None:
    attribute = getattr(f.child if isinstance(f, Not) else f, "attribute", None)
    return attribute[0] if attribute is not None and len(attribute) == 1 else None


def _one(f: Filter) -> tuple[Selection, bool] | None:
    """What ``f`` selects and whether the reader applies it exactly; ``None`` when it cannot be used."""
    column = _column(f)
    if isinstance(f, IsNotNull):
        return (Selection(), True) if column in NEVER_NULL else None
    if column == "topic" and isinstance(f, (EqualTo, EqualNullSafe, In)):
        values = f.value if isinstance(f, In) else (f.value,)
        if all(isinstance(v, str) or v is None for v in values):
            return Selection(topics=frozenset(v for v in values if v is not None)), True
        return None
    if column in ("partition", "offset"):
        if isinstance(f, Not):
            if not isinstance(f.child, (EqualTo, In)) or (isinstance(f.child, In) and None in f.child.value):
                return None  # (x NOT IN (1, NULL) holds for no row)
            inner = _ranges(f.child, _integer)
            ranges = None if inner is None else _complement(inner)
        else:
            ranges = _ranges(f, _integer)
        if ranges is None:
            return None
        return (Selection(partitions=ranges) if column == "partition" else Selection(offsets=ranges)), True
    if column == "timestamp" and not isinstance(f, Not):
        ranges = _ranges(f, micros)
        return None if ranges is None else (Selection(times_us=ranges), False)
    return None


def push(filters: Iterable[Filter]) -> tuple[Selection, list[Filter]]:
    """The selection of a conjunction of pushed filters, and the filters Spark must still apply."""
    selection = Selection()
    rest: list[Filter] = []
    for f in filters:
        used = _one(f)
        if used is None:
            rest.append(f)
            continue
        selection = selection & used[0]
        if not used[1]:
            rest.append(f)
    return selection, rest
