"""Value fitting: one batch's converted values, addressable by row across schema runs, and fitted to the schema of
the file they go to.

A batch can hold several schema runs (Schema Registry values whose writer schema changes mid-batch). Rows go to files
per encoded partition, and a file keeps the schema of its first non-null value: values of another (compatible) schema
are projected to it, nulls take its type.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kafka_s3.core.converters.base import Converted, Logical, ValueSchema
from kafka_s3.core.partitioners.base import Partitioner
from kafka_s3.core.schema_evolution import project


# ------------------------------------------------------------------------------------------------ converted values
class Values:
    """Converted values of one batch (possibly several schema runs), addressable by row."""

    def __init__(self, converted: Converted | None, n: int):
        self.converted = converted
        self.n = n
        runs = converted.runs if converted else []
        self.starts = np.array([start for start, _ in runs], dtype=np.int64)

    @property
    def single(self) -> Logical | None:
        if self.converted and len(self.converted.runs) == 1:
            return self.converted.runs[0][1]
        return None

    def run_codes(self) -> tuple[np.ndarray | None, list[str] | None]:
        """Per-row schema codes (``None`` with a single schema) and the schema fingerprints."""
        if not self.converted:
            return None, None
        # A run of tombstones only has no schema of its own: "" matches any file (it must never roll one, or the
        # cut would depend on how records were batched).
        names = [
            "" if v.schema and v.schema.avro == "null" else (v.schema.fingerprint if v.schema else v.kind)
            for _, v in self.converted.runs
        ]
        # So does a null value (tombstone) inside a typed run: which run it joins depends on the batching.
        typed_nulls = [(start, v.array) for start, v in self.converted.runs if v.schema and v.array.null_count]
        if len(names) == 1 and not typed_nulls:
            return None, names
        codes = np.zeros(self.n, dtype=np.int64)
        for idx, (start, _) in enumerate(self.converted.runs):
            codes[start:] = idx
        if typed_nulls:
            names = names + [""]
            for start, array in typed_nulls:
                nulls = np.flatnonzero(np.asarray(array.is_null()))
                codes[start + nulls] = len(names) - 1
        return codes, names

    def slice(self, start: int, stop: int, target: ValueSchema | None = None) -> Logical | None:
        """Rows ``[start, stop)``; with a ``target`` schema (their file's), values of other schemas projected to it."""
        if self.converted is None:
            return None
        single = self.single
        if single is not None:
            return _fit(single.slice(start, stop - start), target)
        return self.take(np.arange(start, stop), target)

    def take(self, rows: np.ndarray, target: ValueSchema | None = None) -> Logical | None:
        if self.converted is None:
            return None
        single = self.single
        if single is not None:
            return _fit(single.take(pa.array(rows)), target)
        run_of = np.searchsorted(self.starts, rows, side="right") - 1
        pieces = []
        kind = schema = None
        for run in np.unique(run_of):
            start, logical = self.converted.runs[run]
            piece = _fit(logical.take(pa.array(rows[run_of == run] - start)), target)
            kind, schema = piece.kind, piece.schema
            pieces.append(piece.array)
        return Logical(kind, pa.concat_arrays(pieces), schema)  # type: ignore[arg-type]

    def first_value_schema(self, rows: np.ndarray) -> ValueSchema | None:
        """The schema of the first non-null typed value among ``rows`` (ascending), or ``None``."""
        runs = self.converted.runs if self.converted else []
        run_of = np.searchsorted(self.starts, rows, side="right") - 1 if len(runs) > 1 else np.zeros(len(rows), int)
        logical: Logical  # runs[run] is untyped (a numpy index)
        for run in np.unique(run_of):
            start, logical = runs[run]
            if logical.schema is None or logical.schema.avro == "null":
                continue
            local = rows[run_of == run] - start
            if logical.array.null_count == 0 or pc.any(logical.array.take(pa.array(local)).is_valid()).as_py():
                return logical.schema
        return None

    def converted_take(self, rows: np.ndarray) -> Converted | None:
        """The converted values of ``rows`` (ascending), keeping their schema runs."""
        if self.converted is None:
            return None
        run_of = np.searchsorted(self.starts, rows, side="right") - 1
        runs, position = [], 0
        for run in np.unique(run_of):
            start, logical = self.converted.runs[run]
            piece = logical.take(pa.array(rows[run_of == run] - start))
            runs.append((position, piece))
            position += len(piece)
        return Converted(runs)

    def encode_with(self, partitioner: Partitioner, batch: pa.RecordBatch, now_ms: int) -> pa.Array:
        """Encoded partitions, calling the partitioner once per schema run."""
        if self.converted is None or self.single is not None:
            dummy = self.single if self.single is not None else Logical("bytes", batch.column("value"))
            return partitioner.encode(batch, dummy, now_ms)
        parts = []
        bounds = [start for start, _ in self.converted.runs] + [self.n]
        for (start, logical), stop in zip(self.converted.runs, bounds[1:], strict=True):
            parts.append(partitioner.encode(batch.slice(start, stop - start), logical, now_ms))
        return pa.concat_arrays(parts)

    def timestamps_with(self, partitioner: Partitioner, batch: pa.RecordBatch, now_ms: int) -> np.ndarray | None:
        if self.converted is None or self.single is not None:
            dummy = self.single if self.single is not None else Logical("bytes", batch.column("value"))
            return partitioner.timestamps(batch, dummy, now_ms)
        parts = []
        bounds = [start for start, _ in self.converted.runs] + [self.n]
        for (start, logical), stop in zip(self.converted.runs, bounds[1:], strict=True):
            ts = partitioner.timestamps(batch.slice(start, stop - start), logical, now_ms)
            if ts is None:
                return None
            parts.append(ts)
        return np.concatenate(parts)


def _fit(values: Logical, target: ValueSchema | None) -> Logical:
    """Values written to a file of schema ``target``: projected when of another schema, nulls of its type.

    ``target`` is ``None`` when the caller keeps values as they are (keys), ``NULL_VALUES`` for values of a file
    that has no value yet (only nulls so far: they wait for the file's schema).
    """
    if target is None or values.schema is None or values.schema.fingerprint == target.fingerprint:
        return values
    if target.avro == "null" or values.array.null_count == len(values):
        return Logical("struct", pa.array([None] * len(values), target.arrow), target)
    return project(values, target)
