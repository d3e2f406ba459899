"""The benchmark's records, and a fast idempotent producer (used for the dataset and for the raw-produce limit).

Record ``i`` (deterministic, cheap to generate):

- partition ``i % partitions`` (round robin, so partitions are even);
- key ``customer-NNN`` and value a JSON object ``{"id": i, "customer": "c-NNN", "payload": "..."}`` of about
  ``value_size`` bytes, with ``NNN = (i // partitions) % 1000``: every partition sees all 1,000 customers (the
  memory case partitions by this field);
- two headers: ``trace`` (the record number) and ``source``;
- the payload is text from a small vocabulary, so it compresses about like real JSON does.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from dataclasses import dataclass

CUSTOMERS = 1000
PAYLOAD_POOL = 1024
WORDS = [
    "order",
    "shipped",
    "pending",
    "customer",
    "invoice",
    "widget",
    "gadget",
    "priority",
    "express",
    "standard",
    "return",
    "refund",
    "warehouse",
    "berlin",
    "paris",
    "lisbon",
    "tokyo",
    "austin",
    "quantity",
    "price",
    "discount",
    "total",
    "tax",
    "currency",
    "eur",
    "usd",
    "note",
    "gift",
    "wrap",
    "delivered",
    "tracking",
    "carrier",
    "parcel",
    "box",
    "pallet",
    "fragile",
    "cold",
    "frozen",
    "fresh",
    "batch",
    "lot",
    "serial",
    "model",
    "colour",
    "red",
    "blue",
    "green",
    "black",
    "white",
    "small",
    "medium",
    "large",
    "premium",
    "basic",
    "bundle",
    "promo",
    "coupon",
    "loyalty",
    "member",
]


@dataclass(frozen=True)
class Dataset:
    topic: str
    records: int
    value_size: int
    partitions: int

    @property
    def label(self) -> str:
        return f"{self.records:,} × {_size_label(self.value_size)}"


def _size_label(n: int) -> str:
    return f"{n // 1024} KiB" if n >= 1024 and n % 1024 == 0 else f"{n} B"


def _payloads(value_size: int) -> list[bytes]:
    rng = random.Random(value_size)
    # {"id":NNNNNNN,"customer":"c-NNN","payload":"<text>"}: everything but the text is ~45 bytes.
    text_len = max(8, value_size - 45)
    pool = []
    for _ in range(PAYLOAD_POOL):
        words, size = [], 0
        while size < text_len:
            word = rng.choice(WORDS)
            words.append(word)
            size += len(word) + 1
        pool.append(b'"payload":"' + " ".join(words).encode()[:text_len] + b'"}')
    return pool


def records(ds: Dataset) -> Iterator[tuple[int, bytes, bytes, list]]:
    """(partition, key, value, headers) of every record, in production order."""
    pool = _payloads(ds.value_size)
    keys = [b"customer-%03d" % c for c in range(CUSTOMERS)]
    prefixes = [b'","customer":"c-%03d",' % c for c in range(CUSTOMERS)]
    parts = ds.partitions
    for i in range(ds.records):
        c = (i // parts) % CUSTOMERS
        value = b'{"id":"%d' % i + prefixes[c] + pool[i % PAYLOAD_POOL]
        yield i % parts, keys[c], value, [("trace", b"%d" % i), ("source", b"kafka-s3-bench")]


def payload_bytes(ds: Dataset) -> int:
    """Key + value + header bytes of the whole dataset (the "MB" of MB/s)."""
    total = 0
    for _, key, value, headers in records(ds):
        total += len(key) + len(value) + sum(len(k) + len(v) for k, v in headers)
    return total


PRODUCER_SETTINGS = {
    "enable.idempotence": True,
    "linger.ms": 20,
    "batch.size": 1_000_000,
    "queue.buffering.max.messages": 1_000_000,
    "queue.buffering.max.kbytes": 1_048_576,
}


def produce(bootstrap: str, ds: Dataset, topic: str | None = None) -> dict:
    """Produce the dataset into ``topic`` (default: the dataset's); returns records, seconds and records/s."""
    from confluent_kafka import Producer

    topic = topic or ds.topic
    errors: list[str] = []

    def on_delivery(err, _msg) -> None:
        if err is not None and len(errors) < 5:
            errors.append(str(err))

    producer = Producer({"bootstrap.servers": bootstrap, **PRODUCER_SETTINGS})
    produce_, poll = producer.produce, producer.poll
    gen = records(ds)
    started = time.monotonic()
    n = 0
    for partition, key, value, headers in gen:
        while True:
            try:
                produce_(topic, value, key, partition=partition, headers=headers, on_delivery=on_delivery)
                break
            except BufferError:
                poll(0.05)
        n += 1
        if n % 1000 == 0:
            poll(0)
    remaining = producer.flush(300)
    seconds = time.monotonic() - started
    if remaining or errors:
        raise RuntimeError(f"produce to {topic} failed: {remaining} undelivered, errors: {errors}")
    return {"records": n, "seconds": seconds, "records_per_s": n / seconds}
