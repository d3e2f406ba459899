"""Issue 16 (operator experience), items 2-4, as a user sees them: the real ``kafka-s3`` command in a subprocess
against the real Kafka broker, S3 server and Spark. Each case asserts the exit code, the words of the one-line
error, and that no Python or Java traceback reaches the terminal.

Durations are bounded only by the ``service.timeout.ms`` a case sets plus a generous slack for the command's
start-up: the point is that the error arrives before the timeout, not how fast it does.
"""

from __future__ import annotations

import socket
import threading
import time

import pytest

from kafka_s3.core.errors import ConfigError, KafkaError, StoreError
from tests.support.restore import records, run_cli, write_properties

pytestmark = pytest.mark.integration

JSON = {
    "format.class": "json",
    "value.converter": "org.apache.kafka.connect.json.JsonConverter",
    "value.converter.schemas.enable": "false",
}
RAW_OUTPUT = ("Traceback", "py4j", "at org.apache", "Py4JJavaError")
SLACK_S = 15.0  # interpreter and library start-up, on a loaded machine


def assert_clean(stderr: str) -> None:
    for marker in RAW_OUTPUT:
        assert marker not in stderr, stderr[-4000:]
    errors = [line for line in stderr.splitlines() if line.startswith("kafka-s3: error:")]
    assert len(errors) == 1, stderr[-4000:]


def closed_port() -> int:
    """A local port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class SilentServer:
    """Accepts TCP connections and never answers a byte: a hung service, the worst case for a client's timeouts."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = int(self.sock.getsockname()[1])
        self.held: list[socket.socket] = []
        self.closed = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.closed.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.held.append(conn)

    def __enter__(self) -> SilentServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.closed.set()
        self.sock.close()
        for conn in self.held:
            conn.close()


def timed_cli(args: list[str], timeout: float = 300) -> tuple[float, object]:
    started = time.monotonic()
    result = run_cli(args, timeout=timeout)
    return time.monotonic() - started, result


# ----------------------------------------------------------------------------------------- item 2: unreachable
@pytest.mark.parametrize("command", ["backup", "restore"])
def test_dead_kafka_is_reported_before_service_timeout(
    command, make_config, fresh_bucket, fresh_topic, produce, backup, tmp_path
):
    topic = fresh_topic(1)
    produce(topic, records(1, 3))
    backup(fresh_bucket, topic, JSON)  # the restore has objects to plan: it must reach Kafka to go on
    port = closed_port()
    raw, _ = make_config(
        fresh_bucket,
        topic,
        source=command == "restore",
        **{k.replace(".", "__"): v for k, v in JSON.items()},
        bootstrap__servers=f"127.0.0.1:{port}",
        service__timeout__ms="3000",
    )
    path = str(write_properties(tmp_path / "dead-kafka.properties", raw))
    args = [command, "--config", path, "--no-progress"] + (["--once"] if command == "backup" else [])
    seconds, result = timed_cli(args, timeout=120)
    assert result.returncode == KafkaError.exit_code, result.stderr[-3000:]
    assert f"127.0.0.1:{port}" in result.stderr
    assert "Connection refused" in result.stderr  # librdkafka's first error, not only "transport failure"
    assert "service.timeout.ms" in result.stderr
    assert_clean(result.stderr)
    assert seconds < 3 + SLACK_S, f"the error took {seconds:.1f}s with service.timeout.ms=3000"


def test_silent_object_store_is_reported_before_service_timeout(make_config, fresh_topic, tmp_path):
    topic = fresh_topic(1)
    with SilentServer() as server:
        raw, _ = make_config(
            "silent-bucket",
            topic,
            **{k.replace(".", "__"): v for k, v in JSON.items()},
            store__url=f"http://127.0.0.1:{server.port}",
            service__timeout__ms="3000",
        )
        path = str(write_properties(tmp_path / "silent-s3.properties", raw))
        seconds, result = timed_cli(["backup", "--once", "--config", path, "--no-progress"], timeout=400)
    assert result.returncode == StoreError.exit_code, result.stderr[-3000:]
    assert f"http://127.0.0.1:{server.port}" in result.stderr
    assert "service.timeout.ms" in result.stderr
    assert "timeout" in result.stderr.lower()
    assert_clean(result.stderr)
    assert seconds < 3 + SLACK_S, f"the error took {seconds:.1f}s with service.timeout.ms=3000"


def test_refused_s3_credentials_name_endpoint_and_keys(make_config, fresh_bucket, fresh_topic, tmp_path):
    topic = fresh_topic(1)
    raw, _ = make_config(
        fresh_bucket,
        topic,
        source=True,
        aws__access__key__id="not-a-key",
        aws__secret__access__key="not-a-secret",
    )
    path = str(write_properties(tmp_path / "bad-keys.properties", raw))
    seconds, result = timed_cli(["restore", "--config", path, "--no-progress"], timeout=120)
    assert result.returncode == StoreError.exit_code, result.stderr[-3000:]
    assert raw["store.url"] in result.stderr
    assert "access denied" in result.stderr and "aws.access.key.id" in result.stderr
    assert "not-a-secret" not in result.stderr
    assert_clean(result.stderr)
    assert seconds < 10 + SLACK_S


# ----------------------------------------------------------------------------------------- item 4: dry-run truth
@pytest.fixture
def backed_up(make_config, fresh_bucket, fresh_topic, produce, backup, tmp_path):
    """A topic of two partitions backed up with record timestamps (envelope), and its restore configuration file
    pointing at a fresh target topic."""
    topic = fresh_topic(2)
    produce(topic, records(2, 6))
    backup(fresh_bucket, topic, {**JSON, "store.envelope": "true"})
    target = fresh_topic(2)
    raw, _ = make_config(
        fresh_bucket,
        topic,
        source=True,
        **{k.replace(".", "__"): v for k, v in JSON.items()},
        store__envelope="true",
        topic__rename=f"{topic}:{target}",
    )
    return topic, target, str(write_properties(tmp_path / "restore.properties", raw))


@pytest.mark.parametrize("dry_run", [True, False])
@pytest.mark.parametrize(
    ("flags", "words"),
    [
        (
            ["--from-timestamp", "2023-11-14T22:20:00Z", "--until-timestamp", "2023-11-14T22:13:00Z"],
            ["--until-timestamp", "--from-timestamp", "no record"],
        ),
        (["--from-timestamp", "1700000003000", "--until-timestamp", "1700000003000"], ["--until-timestamp"]),
        (["--from-offset", "0:4", "--until-offset", "0:2"], ["--until-offset 2", "--from-offset 4", "partition 0"]),
        (["--from-offset", "1:3", "--until-offset", "1:3"], ["--until-offset 3", "partition 1"]),
    ],
    ids=["until-before-from-time", "until-equals-from-time", "until-below-from-offset", "until-equals-from-offset"],
)
def test_bounds_that_select_nothing_are_config_errors(backed_up, kafka_bootstrap, flags, words, dry_run):
    from kafka_s3.io.kafka.admin import Admin

    topic, target, path = backed_up
    args = ["restore", "--config", path, "--no-progress", *flags] + (["--dry-run"] if dry_run else [])
    result = run_cli(args, timeout=300)
    assert result.returncode == ConfigError.exit_code, (result.stdout[-2000:], result.stderr[-3000:])
    for word in words:
        assert word in result.stderr, result.stderr[-3000:]
    assert_clean(result.stderr)
    admin = Admin({"bootstrap.servers": kafka_bootstrap})
    assert set(admin.end_offsets([(target, 0), (target, 1)]).values()) == {0}, "nothing may be produced"


@pytest.mark.parametrize("dry_run", [True, False])
def test_named_topics_without_objects_are_config_errors(backed_up, dry_run):
    _, _, path = backed_up
    args = ["restore", "--config", path, "--no-progress", "--topics", "never-backed-up"]
    result = run_cli(args + (["--dry-run"] if dry_run else []), timeout=300)
    assert result.returncode == ConfigError.exit_code, (result.stdout[-2000:], result.stderr[-3000:])
    assert "never-backed-up" in result.stderr and "no backed-up objects" in result.stderr
    assert_clean(result.stderr)


# ----------------------------------------------------------------------------------------- item 3: Spark speaks ours
@pytest.fixture
def big_record_backup(make_config, fresh_bucket, fresh_topic, kafka_bootstrap, backup, tmp_path):
    """A backup whose offset 1 is a 1.5 MB record (its source topic allows it), and the configuration of its restore
    into a topic with the broker's default limits; returns (source topic, target topic, record size, file)."""
    from confluent_kafka import Producer

    from kafka_s3.io.kafka.admin import Admin

    source = f"big-{fresh_bucket}"
    Admin({"bootstrap.servers": kafka_bootstrap}).create_topic(source, 1, config={"max.message.bytes": "4000000"})
    value = ('{"big":"' + "x" * 1_500_000 + '"}').encode()  # compact JSON: restored byte for byte
    producer = Producer({"bootstrap.servers": kafka_bootstrap, "message.max.bytes": 4_000_000})
    producer.produce(source, value=b'{"small":1}', partition=0)
    producer.produce(source, value=value, partition=0)
    assert producer.flush(60) == 0
    backup(fresh_bucket, source, JSON)
    target = fresh_topic(1)
    raw, _ = make_config(
        fresh_bucket,
        source,
        source=True,
        **{k.replace(".", "__"): v for k, v in JSON.items()},
        topic__rename=f"{source}:{target}",
    )
    return source, target, len(value), str(write_properties(tmp_path / "restore.properties", raw))


def test_record_over_the_producer_limit_names_record_size_and_properties(big_record_backup, kafka_bootstrap):
    from kafka_s3.core.errors import DataError
    from kafka_s3.io.kafka.admin import Admin

    source, target, size, path = big_record_backup
    result = run_cli(["restore", "--config", path, "--no-progress"], timeout=300)
    assert result.returncode == DataError.exit_code, (result.stdout[-2000:], result.stderr[-4000:])
    line = next(line for line in result.stderr.splitlines() if line.startswith("kafka-s3: error:"))
    assert f"record {source}[0] offset 1 is {size} bytes" in line, line
    assert "producer.override.message.max.bytes" in line and f"target topic {target}'s max.message.bytes" in line
    assert_clean(result.stderr)
    ends = Admin({"bootstrap.servers": kafka_bootstrap}).end_offsets([(target, 0)])
    assert ends[(target, 0)] == 0, "the transaction holding offset 0 was aborted: nothing committed past the error"


def test_dry_run_warns_of_objects_over_the_producer_limit(big_record_backup):
    source, target, _, path = big_record_backup
    dry = run_cli(["restore", "--config", path, "--dry-run"], timeout=300)
    assert dry.returncode == 0, dry.stderr[-3000:]
    warnings = [line for line in dry.stdout.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and "message.max.bytes (1000000)" in warnings[0], dry.stdout[-3000:]
    assert f"({source}[0] from offset 0)" in warnings[0] and f"target topic {target}" in warnings[0], warnings
    assert_clean(dry.stderr + "kafka-s3: error: (none)\n")


class ClosingServer(SilentServer):
    """Accepts connections, counts them, and ends each at once: a Schema Registry that is down, countably.

    It half-closes (FIN) rather than closes: a full close with the client's request still unread sends a reset
    instead, so the client's error would depend on which side of the request the close fell (measured: 127 of
    300 requests saw "Connection reset by peer"). The half-close always reads as "Server disconnected".
    """

    def _accept(self) -> None:
        while not self.closed.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.held.append(conn)
            conn.shutdown(socket.SHUT_WR)


def test_unreachable_schema_registry_ends_after_one_attempt_with_url_and_cause(
    make_config, fresh_bucket, fresh_topic, produce, backup, tmp_path
):
    topic = fresh_topic(1)
    produce(topic, records(1, 3, with_schema=True))
    backup(fresh_bucket, topic, {"format.class": "avro", "value.converter.schemas.enable": "true"})
    target = fresh_topic(1)
    with ClosingServer() as registry:
        url = f"http://127.0.0.1:{registry.port}"
        raw, _ = make_config(
            fresh_bucket,
            topic,
            source=True,
            format__class="avro",
            value__converter="io.confluent.connect.avro.AvroConverter",
            value__converter__schema__registry__url=url,
            value__converter__max__retries="0",  # one connection per task attempt: the count is the attempts
            topic__rename=f"{topic}:{target}",
        )
        path = str(write_properties(tmp_path / "restore.properties", raw))
        result = run_cli(["restore", "--config", path, "--no-progress"], timeout=300)
        connections = len(registry.held)
    assert result.returncode == KafkaError.exit_code, (result.stdout[-2000:], result.stderr[-4000:])
    line = next(line for line in result.stderr.splitlines() if line.startswith("kafka-s3: error:"))
    assert url in line and "Schema Registry" in line and target in line, line
    assert "disconnected" in line, line  # the cause: the server closed the connection
    assert_clean(result.stderr)
    assert connections == 1, f"{connections} connections: the task ran more than once"


def test_debug_shows_the_full_trace_of_a_registry_outage(
    make_config, fresh_bucket, fresh_topic, produce, backup, tmp_path
):
    """``--debug`` keeps the full trace for the one who asks (the same registry outage as above)."""
    topic = fresh_topic(1)
    produce(topic, records(1, 2, with_schema=True))
    backup(fresh_bucket, topic, {"format.class": "avro", "value.converter.schemas.enable": "true"})
    raw, _ = make_config(
        fresh_bucket,
        topic,
        source=True,
        format__class="avro",
        value__converter="io.confluent.connect.avro.AvroConverter",
        value__converter__schema__registry__url=f"http://127.0.0.1:{closed_port()}",
        topic__rename=f"{topic}:{fresh_topic(1)}",
    )
    path = str(write_properties(tmp_path / "restore.properties", raw))
    result = run_cli(["--debug", "restore", "--config", path, "--no-progress"], timeout=300)
    assert result.returncode != 0
    assert "Traceback" in result.stderr and "SchemaRegistryUnavailable" in result.stderr
