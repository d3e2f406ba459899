"""The peer: Quix Streams' S3 FileSink (backup) and S3 FileSource (restore), run the way their docs show.

Runs inside ``.venv-peer`` (quixstreams pins confluent-kafka < 2.13, so it cannot share the project's venv); started
by ``bench/peer.py`` as a subprocess, prints one JSON line of timings on stdout:

    peer_quix.py sink   --topic T --partitions P --records N --bucket B --format json|parquet --group G
    peer_quix.py source --topic T --partitions P --records N --bucket B --format json|parquet --target T2

``sink``: an Application consuming T from the beginning (values deserialised as JSON) into ``S3FileSink``; a monitor
thread stops it once the group's committed offsets reach the end of T (Quix commits after the sink has flushed, so
that is "everything is in S3"). ``source``: ``S3FileSource`` reading the sink's objects (``<topic>/<partition>/...``)
and producing them to T2; stopped once T2's high watermarks add up to N.

Times (seconds, from the start of the script, after imports): ``ready`` (Application built, about to run),
``first`` (first record consumed by the sink's dataframe / produced by the source), ``done``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
import threading
import time

T0 = time.monotonic()

from confluent_kafka import Consumer, TopicPartition  # noqa: E402
from quixstreams import Application  # noqa: E402
from quixstreams.sinks.community.file.s3 import S3FileSink  # noqa: E402
from quixstreams.sources.community.file.s3 import S3FileSource  # noqa: E402

IMPORTED = time.monotonic() - T0
# noida-db (the local broker) ignores fetch size limits: a whole partition can come back in one response.
CONSUMER_EXTRA = {"receive.message.max.bytes": 2147483647}


SCRATCH: list[str] = []


def scratch(prefix: str) -> str:
    SCRATCH.append(tempfile.mkdtemp(prefix=prefix))
    return SCRATCH[-1]


def now() -> float:
    return time.monotonic() - T0


class Progress:
    """Committed offsets of a group / high watermarks of a topic, summed over partitions (one reused client)."""

    def __init__(self, bootstrap: str, topic: str, partitions: int, group: str = "kafka-s3-bench-peer-watch"):
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
        self.partitions = [TopicPartition(topic, p) for p in range(partitions)]

    def committed(self) -> int:
        return sum(max(tp.offset, 0) for tp in self.consumer.committed(self.partitions, timeout=10))

    def watermarks(self) -> int:
        try:
            return sum(self.consumer.get_watermark_offsets(tp, timeout=10, cached=False)[1] for tp in self.partitions)
        except Exception:  # the target topic may not exist yet
            return 0

    def close(self) -> None:
        self.consumer.close()


def watch(app: Application, done_check, times: dict, deadline: float) -> threading.Thread:
    def loop() -> None:
        while True:
            time.sleep(0.25)
            try:
                if done_check():
                    times["done"] = now()
                    break
            except Exception as exc:  # keep watching through transient errors
                times.setdefault("watch_errors", []).append(str(exc)[:200])
            if now() > deadline:
                times["timed_out"] = True
                break
        app.stop()

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    return thread


def run_sink(args, bootstrap: str, times: dict) -> None:
    progress = Progress(bootstrap, args.topic, args.partitions, args.group)
    target_end = progress.watermarks()
    app = Application(
        broker_address=bootstrap,
        consumer_group=args.group,
        auto_offset_reset="earliest",
        consumer_extra_config=CONSUMER_EXTRA,
        state_dir=scratch("quix-state-"),
        loglevel="WARNING",
    )
    topic = app.topic(args.topic, key_deserializer="bytes", value_deserializer="json")
    sdf = app.dataframe(topic)

    def first(value):
        if "first" not in times:
            times["first"] = now()

    sdf = sdf.update(first)
    sdf.sink(S3FileSink(bucket=args.bucket, directory="", format=args.format))
    times["ready"] = now()
    watch(app, lambda: progress.committed() >= target_end, times, args.timeout)
    app.run()
    times["records"] = progress.committed()
    progress.close()


class TimedS3FileSource(S3FileSource):
    """S3FileSource noting when its first record is produced. The source runs in a child process: the moment goes
    through a file (CLOCK_MONOTONIC is shared by all processes)."""

    def __init__(self, *args, first_file: str, **kwargs):
        super().__init__(*args, **kwargs)
        self._first_file = first_file
        self._first_seen = False

    def process_record(self, record):
        if not self._first_seen:
            self._first_seen = True
            with open(self._first_file, "w") as f:
                f.write(repr(time.monotonic()))
        super().process_record(record)


def run_source(args, bootstrap: str, times: dict) -> None:
    app = Application(
        broker_address=bootstrap,
        consumer_group=f"{args.target}-app",
        auto_offset_reset="earliest",
        consumer_extra_config=CONSUMER_EXTRA,
        state_dir=scratch("quix-state-"),
        loglevel="WARNING",
    )
    # FileSink's directory is the topic name with characters outside [a-zA-Z0-9 ._/] replaced by "_".
    directory = re.sub(r"[^a-zA-Z0-9 ._/]", "_", args.topic)
    first_file = os.path.join(scratch("quix-first-"), "first")
    source = TimedS3FileSource(
        filepath=directory,
        bucket=args.bucket,
        file_format=args.format,
        compression=None,
        has_partition_folders=False,
        replay_speed=0.0,
        name=f"{args.target}-source",
        first_file=first_file,
    )
    topic = app.topic(args.target, key_serializer="string", value_serializer="json")
    app.add_source(source, topic=topic)
    times["ready"] = now()

    progress = Progress(bootstrap, args.target, args.partitions)
    watch(app, lambda: progress.watermarks() >= args.records, times, args.timeout)
    app.run()
    times["records"] = progress.watermarks()
    progress.close()
    try:
        with open(first_file) as f:
            times["first"] = float(f.read()) - T0
    except (OSError, ValueError):
        pass


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["sink", "source"])
    parser.add_argument("--topic", required=True)
    parser.add_argument("--partitions", type=int, required=True)
    parser.add_argument("--records", type=int, required=True)
    parser.add_argument("--bucket", required=True)
    parser.add_argument("--format", choices=["json", "parquet"], default="json")
    parser.add_argument("--group", default="")
    parser.add_argument("--target", default="")
    parser.add_argument("--timeout", type=float, default=1800)
    args = parser.parse_args()
    bootstrap = os.environ["KAFKA_BOOTSTRAP_SERVERS"]
    times: dict = {"imports": IMPORTED}
    try:
        (run_sink if args.mode == "sink" else run_source)(args, bootstrap, times)
    except Exception as exc:
        times["error"] = f"{type(exc).__name__}: {exc}"
    finally:
        for path in SCRATCH:
            shutil.rmtree(path, ignore_errors=True)
    print(json.dumps(times), flush=True)
    return 1 if "error" in times or times.get("timed_out") else 0


if __name__ == "__main__":
    sys.exit(main())
