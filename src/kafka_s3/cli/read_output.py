"""What ``kafka-s3 read`` prints: records as a table (partition, offset, time, key, value, headers), JSON lines or raw
values, and where the offsets read jump (a gap: offsets the backup does not hold)."""

from __future__ import annotations

import base64
import datetime as dt
import json
from collections.abc import Iterator
from typing import Any

FORMATS = ("table", "json", "raw")


def gaps(records: list[dict[str, Any]], start: int) -> Iterator[tuple[int, tuple[int, int]]]:
    """``(index, (first, last))`` for every run of offsets missing before ``records[index]``, from ``start`` on."""
    expected = start
    for index, record in enumerate(records):
        if record["offset"] > expected:
            yield index, (expected, record["offset"] - 1)
        expected = record["offset"] + 1


def gap_text(topic: str, partition: int, first: int, last: int) -> str:
    span = f"offset {first}" if first == last else f"offsets {first}..{last}"
    return (
        f"gap: {topic}[{partition}] {span} not in the backup (compacted away, transaction markers, or a missing "
        "object: kafka-s3 verify tells which)"
    )


def _text(data: bytes | None, as_base64: bool) -> str | None:
    if data is None:
        return None
    if as_base64:
        return base64.b64encode(data).decode("ascii")
    return data.decode("utf-8", errors="backslashreplace")


def _json_bytes(data: bytes | None, as_base64: bool) -> Any:
    """A string when the bytes are UTF-8 (and base64 is not asked for), else ``{"base64": ...}``."""
    if data is None:
        return None
    if not as_base64:
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            pass
    return {"base64": base64.b64encode(data).decode("ascii")}


def _time(ms: int | None) -> str:
    if ms is None:
        return "-"
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def render(
    records: list[dict[str, Any]], topic: str, partition: int, start: int, fmt: str, as_base64: bool
) -> tuple[list[str], list[str]]:
    """The lines for stdout and the lines for stderr. The table says where a gap is in line; JSON lines and raw
    values keep stdout to records only and say it on stderr."""
    out: list[str] = []
    notes: list[str] = []
    missing = dict(gaps(records, start))
    if fmt == "table":
        rows = [("partition", "offset", "timestamp (UTC)", "key", "value")]
        gap_rows: dict[int, str] = {}
        for index, record in enumerate(records):
            if index in missing:
                gap_rows[len(rows)] = gap_text(topic, partition, *missing[index])
            headers = ", ".join(f"{k}={_text(v, as_base64)}" for k, v in record["headers"])
            value = "null" if record["value"] is None else _text(record["value"], as_base64) or ""
            rows.append(
                (
                    str(partition),
                    str(record["offset"]),
                    _time(record["timestamp"]),
                    _text(record["key"], as_base64) or "-",
                    value + (f"  headers: {headers}" if headers else ""),
                )
            )
        widths = [max(len(row[i]) for row in rows) for i in range(4)]
        for number, row in enumerate(rows):
            if number in gap_rows:
                out.append(gap_rows[number])
            cells = [row[0].rjust(widths[0]), row[1].rjust(widths[1]), row[2].ljust(widths[2]), row[3].ljust(widths[3])]
            out.append("  ".join([*cells, row[4]]).rstrip())
        return out, notes
    for index, record in enumerate(records):
        if index in missing:
            notes.append(gap_text(topic, partition, *missing[index]))
        if fmt == "json":
            doc = {
                "topic": topic,
                "partition": partition,
                "offset": record["offset"],
                "timestamp": record["timestamp"],
                "key": _json_bytes(record["key"], as_base64),
                "value": _json_bytes(record["value"], as_base64),
                "headers": [[k, _json_bytes(v, as_base64)] for k, v in record["headers"]],
            }
            out.append(json.dumps(doc, ensure_ascii=False))
        else:
            out.append(_text(record["value"], as_base64) or "")
    return out, notes
