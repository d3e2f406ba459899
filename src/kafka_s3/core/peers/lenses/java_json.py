"""JSON text as the JVM peers write it: Jackson's output of Java and Scala hash maps, Java's number texts.

Lenses' sink builds its JSON envelope out of ``java.util.HashMap`` s and Scala ``mutable.HashMap`` s and writes them
with Jackson (LS ``sink/transformers/SchemalessEnvelopeTransformer``, ``sink/conversion/ToJsonDataConverter``): the
fields of an object come out in the map's iteration order, which is its hash-table order. To write the same bytes,
:func:`java_hashmap_order` and :func:`scala_hashmap_order` compute those orders from the keys:

- ``java.util.HashMap`` (OpenJDK ``HashMap.hash``/``putVal``/``resize``): the bucket of a key is
  ``(h ^ (h >>> 16)) & (capacity - 1)`` with ``h`` the key's ``String.hashCode``; the capacity starts at 16 and
  doubles when the size passes 3/4 of it; iteration walks the buckets in index order, each bucket's keys in the order
  they were put (a resize splits buckets keeping that order).
- Scala 2.13 ``mutable.HashMap`` (``HashMap.put0``/``growTable``): the same spread hash and buckets, but the table
  doubles *before* an insertion that would bring the size to 3/4 of it, and each bucket is kept sorted by the spread
  hash.

Buckets holding 8 keys or more are turned into trees by ``java.util.HashMap`` once its table has 64 buckets: not
modelled (objects with that many colliding keys).
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

INITIAL_CAPACITY = 16


def java_double(value: float) -> str:
    """Java's ``Double.toString``: plain notation for 1e-3 <= |x| < 1e7, else ``d.dddE±n``."""
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if str(value).startswith("-") else "0.0"
    if 1e-3 <= abs(value) < 1e7:
        text = repr(value)
        return text if "." in text or "e" in text else text + ".0"
    sign, digits, exponent = Decimal(repr(value)).as_tuple()
    mantissa = "".join(map(str, digits)).rstrip("0") or "0"
    power = len(digits) + int(exponent) - 1
    return f"{'-' if sign else ''}{mantissa[0]}.{mantissa[1:] or '0'}E{power}"


def string_hash(text: str) -> int:
    """Java's ``String.hashCode`` (over UTF-16 code units, 32-bit signed)."""
    h = 0
    units = text.encode("utf-16-be", "surrogatepass")
    for i in range(0, len(units), 2):
        h = (31 * h + ((units[i] << 8) | units[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def spread(h: int) -> int:
    """``h ^ (h >>> 16)`` as a signed 32-bit int (Java's ``HashMap.hash``, Scala's ``improveHash``)."""
    unsigned = h & 0xFFFFFFFF
    mixed = unsigned ^ (unsigned >> 16)
    return mixed - (1 << 32) if mixed >= 1 << 31 else mixed


def _unique(keys: Iterable[str]) -> list[str]:
    """Keys in the order they were first put (a later put of the same key replaces the value in place)."""
    return list(dict.fromkeys(keys))


def java_hashmap_order(keys: Iterable[str]) -> list[str]:
    """The iteration order of a ``java.util.HashMap`` into which ``keys`` were put in this order."""
    unique = _unique(keys)
    capacity = INITIAL_CAPACITY
    while len(unique) > capacity * 3 // 4:  # putVal: resize() when ++size > threshold
        capacity *= 2
    buckets = [spread(string_hash(k)) & (capacity - 1) for k in unique]
    return [k for _, _, k in sorted(zip(buckets, range(len(unique)), unique, strict=True))]


def scala_hashmap_order(keys: Iterable[str]) -> list[str]:
    """The iteration order of a Scala 2.13 ``mutable.HashMap`` into which ``keys`` were put in this order."""
    unique = _unique(keys)
    capacity = INITIAL_CAPACITY
    while len(unique) >= capacity * 3 // 4:  # put0: growTable when contentSize + 1 >= threshold
        capacity *= 2
    hashes = [spread(string_hash(k)) for k in unique]
    ordered = sorted(zip((h & (capacity - 1) for h in hashes), hashes, range(len(unique)), unique, strict=True))
    return [k for _, _, _, k in ordered]


class Raw(str):
    """JSON text already rendered (e.g. a Java float's ``Float.toString``): :func:`jackson` writes it as it is."""


@dataclass(frozen=True)
class JavaMap:
    """An object Jackson writes from a ``java.util.HashMap`` (``items`` in the order they were put)."""

    items: Sequence[tuple[str, Any]]


@dataclass(frozen=True)
class ScalaMap:
    """An object Jackson writes from a Scala ``mutable.HashMap`` seen as a Java map (``.asJava``)."""

    items: Sequence[tuple[str, Any]]


_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\f": "\\f", "\n": "\\n", "\r": "\\r"}


def jackson_string(text: str) -> str:
    """A JSON string as Jackson writes it: ``"`` and ``\\`` escaped, the control characters as ``\\b \\t \\f \\n
    \\r`` or ``\\u00XX`` (upper-case hex), everything else as it is (``/`` and non-ASCII unescaped)."""
    out = ['"']
    for char in text:
        if char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif ord(char) < 0x20:
            out.append(f"\\u{ord(char):04X}")
        else:
            out.append(char)
    out.append('"')
    return "".join(out)


def _ordered(value: JavaMap | ScalaMap) -> list[tuple[str, Any]]:
    last = dict(value.items)  # a repeated key keeps its last value
    keys = [k for k, _ in value.items]
    order = java_hashmap_order(keys) if isinstance(value, JavaMap) else scala_hashmap_order(keys)
    return [(k, last[k]) for k in order]


def jackson(value: Any) -> str:
    """Compact JSON text of ``value`` as Jackson's ``ObjectMapper.writeValueAsString`` writes it: maps in their hash
    order (:class:`JavaMap`, :class:`ScalaMap`), ``bytes`` as base64 (Jackson's default variant), ``float`` as Java's
    ``Double.toString``, lists and tuples as arrays."""
    if isinstance(value, Raw):
        return str(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return java_double(value)
    if isinstance(value, str):
        return jackson_string(value)
    if isinstance(value, bytes):
        return '"' + base64.b64encode(value).decode("ascii") + '"'
    if isinstance(value, (JavaMap, ScalaMap)):
        return "{" + ",".join(jackson_string(k) + ":" + jackson(v) for k, v in _ordered(value)) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(jackson(item) for item in value) + "]"
    raise TypeError(f"no JSON text for a {type(value).__name__}")
