"""What the Kafka reader's Python adds per record when a backup stores headers and timestamps (the envelope), beside
a value-only backup that skips them — the "header building" lever, measured before deciding it.

Consumes the bench's records (keys, two headers, 1 KiB values) from one partition once, then times
``kafka_s3.io.kafka.reader._batch`` over the same 5,000-message chunks with and without headers and timestamps:
process CPU seconds per 100,000 records, best of ``--rounds``. Needs a broker (``make services-up``); nothing is
asserted.

    .venv/bin/python bench/reader_batch.py                 # KAFKA_BOOTSTRAP_SERVERS or 127.0.0.1:21092
"""

from __future__ import annotations

import argparse
import os
import time
import uuid

from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from dataset import Dataset, produce
from kafka_s3.io.kafka.reader import _batch

CHUNK = 5000  # read_range's max_batch


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bootstrap", default=os.environ.get("KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:21092"))
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--value-size", type=int, default=1024)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)

    topic = f"kafka-s3-bench-reader-batch-{uuid.uuid4().hex[:6]}"
    admin = AdminClient({"bootstrap.servers": args.bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result()
    try:
        produce(args.bootstrap, Dataset(topic, args.records, args.value_size, 1))
        consumer = Consumer({"bootstrap.servers": args.bootstrap, "group.id": topic, "enable.auto.commit": False})
        consumer.assign([TopicPartition(topic, 0, 0)])
        messages: list = []
        while len(messages) < args.records:
            messages += [m for m in consumer.consume(CHUNK, 2.0) if m.error() is None]
        consumer.close()
    finally:
        admin.delete_topics([topic])[topic].result()
    chunks = [messages[i : i + CHUNK] for i in range(0, len(messages), CHUNK)]
    per = 100_000 / len(messages)
    for label, headers, timestamps in (
        ("neither (value-only formats)", False, False),
        ("timestamps", False, True),
        ("headers", True, False),
        ("headers and timestamps (envelope)", True, True),
    ):
        best = float("inf")
        for _ in range(args.rounds):
            started = time.process_time()
            for chunk in chunks:
                _batch(topic, 0, chunk, headers, timestamps)
            best = min(best, time.process_time() - started)
        print(f"{label:36s} {best * per:.3f} CPU-s per 100,000 records")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
