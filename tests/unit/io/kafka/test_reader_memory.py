"""Issue 18 item 3: what one Kafka reader (one per Python worker) may hold is bounded by its own settings."""

from __future__ import annotations

from kafka_s3.core.config.sink import SINK
from kafka_s3.io.kafka.reader import consumer_settings
from kafka_s3.io.stores.spec import StoreSpec

MiB = 1024 * 1024


def test_reader_bounds_its_fetch_and_prefetch_queue():
    settings = consumer_settings({"bootstrap.servers": "localhost:9092"})

    # librdkafka's defaults (50 MiB responses, a 64 MiB prefetch queue) were half a worker's RSS
    assert int(settings["fetch.max.bytes"]) == 16 * MiB
    assert int(settings["queued.max.messages.kbytes"]) * 1024 == 16 * MiB


def test_reader_memory_settings_stay_overridable():
    settings = consumer_settings({"fetch.max.bytes": "1048576", "queued.max.messages.kbytes": "2048"})

    assert (settings["fetch.max.bytes"], settings["queued.max.messages.kbytes"]) == ("1048576", "2048")


def test_upload_memory_budget_defaults_to_two_default_parts():
    config = SINK.parse(
        {
            "name": "b",
            "connector.class": "io.confluent.connect.s3.S3SinkConnector",
            "topics": "t",
            "s3.bucket.name": "bucket",
            "flush.size": "1000",
            "format.class": "io.confluent.connect.s3.format.bytearray.ByteArrayFormat",
        }
    )

    assert config["upload.buffer.memory.total.bytes"] == 64 * MiB
    assert StoreSpec.from_config(config).memory_budget_bytes == 64 * MiB


def test_a_full_prefetch_queue_delays_the_next_fetch_by_milliseconds_not_a_second():
    """librdkafka postpones a partition's next fetch by ``fetch.queue.backoff.ms`` (default 1,000 ms) whenever its
    prefetch queue is over ``queued.max.messages.kbytes``. With the reader's 16 MiB queue (1 KiB records: 16,000 of
    them, read in a fraction of a second) every reader idled most of each second: 21,900 rec/s per partition against
    158,000–165,000 rec/s with 10 ms (bench/README.md, "Reader fetch backoff"), and every backup with it."""
    settings = consumer_settings({"bootstrap.servers": "localhost:9092"})

    assert int(settings["fetch.queue.backoff.ms"]) <= 10
    assert consumer_settings({"fetch.queue.backoff.ms": "500"})["fetch.queue.backoff.ms"] == "500"  # overridable
