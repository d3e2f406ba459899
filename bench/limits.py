"""Limits measured on the same data and services: what a bare client reaches with no work per record.

- raw Python consume (confluent-kafka, one consumer over all partitions, nothing done per record);
- kcat consume (the reference C client), when ``kcat`` is installed;
- raw Python produce of the same records into a fresh topic (the same idempotent producer as the dataset);
- S3 write/read throughput of large objects with boto3 (multipart put + get).
"""

from __future__ import annotations

import io
import shutil
import subprocess
import time
import uuid

from common import (
    MiB,
    Services,
    create_bucket,
    create_topic,
    delete_topics,
    remove_bucket,
    s3_client,
)
from dataset import Dataset, produce

# noida-db ignores fetch size limits (a whole partition can come back in one response, rejected by librdkafka's
# default receive limit), so the raw consumer raises it.
CONSUMER_SETTINGS = {
    "receive.message.max.bytes": 2147483647,
    "enable.auto.commit": False,
    "enable.partition.eof": True,
    "auto.offset.reset": "earliest",
}


def raw_consume(services: Services, ds: Dataset) -> dict:
    """Read the whole topic once from the beginning; count records, nothing else."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": services.bootstrap,
            "group.id": f"kafka-s3-bench-{uuid.uuid4().hex[:8]}",
            **CONSUMER_SETTINGS,
        }
    )
    started = time.monotonic()
    consumer.assign([TopicPartition(ds.topic, p, OFFSET_BEGINNING) for p in range(ds.partitions)])
    count, done = 0, set()
    try:
        while len(done) < ds.partitions:
            for message in consumer.consume(num_messages=10000, timeout=0.1):
                err = message.error()
                if err is None:
                    count += 1
                elif err.code() == KafkaError._PARTITION_EOF:
                    done.add(message.partition())
                else:
                    raise RuntimeError(f"raw consume: {err}")
            if time.monotonic() - started > 1800:
                raise RuntimeError("raw consume did not finish in 30 minutes")
        seconds = time.monotonic() - started
    finally:
        consumer.close()
    return {"records": count, "seconds": seconds, "records_per_s": count / seconds}


def kcat_consume(services: Services, ds: Dataset) -> dict | None:
    """``kcat -C ... -e``: one byte of output per record, counted here. None when kcat is not installed."""
    kcat = shutil.which("kcat") or shutil.which("kafkacat")
    if not kcat:
        return None
    command = [
        kcat,
        "-C",
        "-b",
        services.bootstrap,
        "-t",
        ds.topic,
        "-o",
        "beginning",
        "-e",
        "-q",
        "-f",
        ".",
        "-X",
        "receive.message.max.bytes=2147483647",
    ]
    started = time.monotonic()
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    count = 0
    while True:
        chunk = proc.stdout.read(1 << 20)
        if not chunk:
            break
        count += len(chunk)
    proc.wait()
    seconds = time.monotonic() - started
    if proc.returncode != 0:
        return {"error": proc.stderr.read().decode(errors="replace")[-500:], "records": count, "seconds": seconds}
    return {"records": count, "seconds": seconds, "records_per_s": count / seconds}


def raw_produce(services: Services, ds: Dataset) -> dict:
    """Produce the same records into a fresh topic (deleted afterwards)."""
    topic = f"{ds.topic}-rawproduce-{uuid.uuid4().hex[:6]}"
    create_topic(services, topic, ds.partitions)
    try:
        return produce(services.bootstrap, ds, topic)
    finally:
        delete_topics(services, [topic])


def s3_throughput(services: Services, bucket: str, objects: int = 4, size_mib: int = 64) -> dict:
    """Multipart put then get of ``objects`` × ``size_mib`` MiB, sequentially, one stream at a time (the way one
    task uploads), then the same with boto3's default concurrency (10 threads)."""
    from boto3.s3.transfer import TransferConfig

    client = s3_client(services)
    create_bucket(services, bucket)
    data = (bytes(range(256)) * (MiB // 256)) * size_mib  # incompressible-enough, identical for every run
    total = objects * len(data)
    out = {"objects": objects, "object_mib": size_mib}
    try:
        for label, config in (
            ("single stream", TransferConfig(multipart_chunksize=16 * MiB, use_threads=False)),
            ("10 threads", TransferConfig(multipart_chunksize=16 * MiB, max_concurrency=10)),
        ):
            started = time.monotonic()
            for i in range(objects):
                client.upload_fileobj(io.BytesIO(data), bucket, f"{label}/{i}", Config=config)
            put = time.monotonic() - started
            started = time.monotonic()
            for i in range(objects):
                sink = io.BytesIO()
                client.download_fileobj(bucket, f"{label}/{i}", sink, Config=config)
                got = len(sink.getbuffer())  # not tell(): threaded downloads write parts out of order
                if got != len(data):
                    raise RuntimeError(f"S3 get returned {got} bytes, expected {len(data)}")
            get = time.monotonic() - started
            out[label] = {
                "put_mb_per_s": total / put / 1e6,
                "get_mb_per_s": total / get / 1e6,
                "put_seconds": put,
                "get_seconds": get,
            }
    finally:
        remove_bucket(services, bucket)
    return out
