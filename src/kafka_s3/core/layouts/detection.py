"""Which tool wrote the objects under a prefix: kafka-s3, Confluent's S3 sink, Lenses' stream-reactor or DeviantArt's
connector, told apart by object names alone (facts sheet A1, B1/B4, C).

A small registry: each layout has a name (the value of ``restore.layout``), a title for the plan, a detector that
claims keys by their name relative to the prefix, and the import string of the :class:`~kafka_s3.core.layout.Layout`
class that reads it (``None``: the standard one). kafka-s3's own is registered here, each peer's from its
:class:`~kafka_s3.core.peers.base.Peer` (``kafka_s3.core.peers``), in the registry's order. A layout whose reader is
not installed is still *detected*, so a restore refuses it by name instead of finding "no objects". :func:`detect`
is pure: the caller lists the keys.

=============  =======================================================================================
layout         names (relative to the prefix)
=============  =======================================================================================
kafka-s3       Confluent's names plus kafka-s3's own ``_kafka-s3/`` metadata (chunk manifests); the manifests beside
               a peer's names are kafka-s3 writing that peer's layout (a DeviantArt configuration)
confluent      ``<topic>/<encodedPartition>/<topic>+<partition>+<offset><ext>``, sidecars alike
lenses         ``<topic>/<partition>/<offset>[_<minTs>_<maxTs>].<ext>``, ``…/<topic>(<partition>_<offset>).<ext>``,
               ``.indexes/…`` (at the bucket root)
deviantart     ``<yyyy-MM-dd>/<topic>-<partition %05d>-<offset %012d>.gz[.index.json]``,
               ``last_chunk_index.<topic>-<partition %05d>.txt``
=============  =======================================================================================
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from kafka_s3.core.errors import LayoutError
from kafka_s3.core.manifest import MANIFEST_DIR
from kafka_s3.core.peers import DEFAULT, PEERS

AUTO = "auto"
OWN = "kafka-s3"

#: (relative key, directory delimiter, file delimiter) -> whether the layout wrote it
Claim = Callable[[str, str, str], bool]


@dataclass(frozen=True)
class LayoutKind:
    name: str
    short: str  # "Lenses": for "Lenses layout: not readable by this version"
    title: str
    claims: Claim
    reader: str | None = None  # "module:Class" of the Layout reading it; None: kafka_s3.core.layout.Layout


def _kafka_s3(key: str, delim: str, file_delim: str) -> bool:
    return key.startswith(MANIFEST_DIR + delim)


LAYOUTS: dict[str, LayoutKind] = {}


def register(kind: LayoutKind) -> None:
    LAYOUTS[kind.name] = kind


register(LayoutKind(OWN, "kafka-s3", "kafka-s3's (Confluent's names with chunk manifests)", _kafka_s3))
for _peer in PEERS:
    register(LayoutKind(_peer.name, _peer.short, _peer.title, _peer.claims, reader=_peer.layout))


@dataclass(frozen=True)
class Detection:
    """The layout of a prefix: ``name`` is ``None`` when nothing under it was recognised."""

    name: str | None
    examples: dict[str, str] = field(default_factory=dict)  # layout -> one of its keys
    detected: bool = True  # False: restore.layout named it
    where: str = ""  # the store URL and prefix looked at

    def describe(self) -> str:
        where = self.where or "the prefix"
        if self.name is None:
            return f"layout: none recognised under {where} (read as configured)"
        title = LAYOUTS[self.name].title
        if not self.detected:
            return f"layout: {title} (restore.layout={self.name})"
        example = self.examples.get(self.name) or next(iter(self.examples.values()), "")
        return f"layout: {title}, detected under {where} (e.g. {example})"


def detect(keys: Iterable[str], prefix: str, delim: str = "/", file_delim: str = "+", where: str = "") -> Detection:
    """The layout the keys under ``prefix`` (ending with ``delim``, or empty) follow; :class:`LayoutError` when they
    mix layouts. Keys no layout claims (a README, another tool's files) are ignored."""
    examples: dict[str, str] = {}
    for key in keys:
        relative = key[len(prefix) :] if key.startswith(prefix) else key
        claimant = next((kind.name for kind in LAYOUTS.values() if kind.claims(relative, delim, file_delim)), None)
        if claimant is not None:
            examples.setdefault(claimant, key)
    found = set(examples)
    peers = found - {OWN, DEFAULT.name}  # the tools whose layouts are not kafka-s3's own
    if len(peers) > 1 or (peers and DEFAULT.name in found):
        listed = "; ".join(f"{LAYOUTS[n].title} (e.g. {examples[n]})" for n in LAYOUTS if n in found)
        raise LayoutError(
            f"{where or prefix or 'the bucket'} mixes the objects of several tools: {listed}. Restore one layout at "
            "a time: point topics.dir (or the peer's prefix) at one of them, or set restore.layout to read only one"
        )
    if peers:
        found = peers  # kafka-s3's manifests beside a peer's names: our backup written in that peer's layout
    elif OWN in found:
        found = {OWN}  # Confluent's names with our manifests: our backup
    if not found:
        return Detection(None, examples, where=where)
    (name,) = found
    return Detection(name, examples, where=where)
