"""Issue 16, the bad-input suite: one table of what an operator gets wrong (files, keys, flags, buckets, damaged
objects), one test driving the real ``kafka-s3`` command in a subprocess against the real Kafka broker, S3 server
and Spark. Every case asserts the exit code, words of the one error line (the key, object, offset or flag it is
about), that no Python or Java traceback reaches the terminal, and that nothing was produced or committed past the
error: the bucket holds the same objects as before, a backup committed no consumer group offset, a restore's target
holds no record past the fault (committed or not) and no restore progress beyond it.

Most cases fail before Spark starts. They share one backup made once per module (2 partitions x 9 JSON records,
three objects per partition); cases that damage the backup work on a copy of it in a bucket of their own.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from kafka_s3.core.errors import (
    BackupIncomplete,
    ConfigError,
    KafkaError,
    LayoutError,
    NotInBackup,
    PlanError,
    RestoreFailed,
    StoreError,
)
from tests.support.integration import list_keys
from tests.support.restore import read_topic, records, run_cli, write_properties

pytestmark = pytest.mark.integration

PARTITIONS, PER_PARTITION = 2, 9  # flush.size=3: objects at offsets 0, 3 and 6 of each partition
JSON = {
    "format.class": "json",
    "value.converter": "org.apache.kafka.connect.json.JsonConverter",
    "value.converter.schemas.enable": "false",
}
RAW_OUTPUT = ("Traceback", "py4j", "at org.apache", "Py4JJavaError", "Exception in thread")
DELETE = object()  # a property value meaning "remove this key from the file"


@dataclass(frozen=True)
class Golden:
    """The module's backup: ``topic`` backed up into ``bucket``."""

    topic: str
    bucket: str
    keys: tuple[str, ...]


@dataclass
class Ctx:
    """What a case's templates may name: ``{topic}`` (backed-up source), ``{target}`` (restore target), ``{bucket}``
    (the bucket the command uses), ``{name}`` (the configuration's name), ``{o0_3}`` (the key of the object of
    partition 0 from offset 3), ``{tmp}`` (the case's directory)."""

    topic: str
    target: str
    bucket: str
    name: str
    tmp: Path

    def fmt(self, text: str) -> str:
        return text.format(
            topic=self.topic,
            target=self.target,
            bucket=self.bucket,
            name=self.name,
            tmp=self.tmp,
            o0_3=object_key(self.topic, 0, 3),
        )


@dataclass(frozen=True)
class Case:
    id: str
    command: list[str]  # the words after ``kafka-s3`` (``--config FILE`` is added unless the case writes ``raw``)
    code: int
    words: list[str]  # each must be in the error output ({…} templates of Ctx)
    props: dict = field(default_factory=dict)  # changes to the command's configuration (DELETE removes a key)
    raw: str | None = None  # the configuration file's whole text instead (written as {tmp}/<file>)
    file: str = "case.properties"
    damage: Callable | None = None  # damage(s3_client, bucket, topic): the case works on a copy of the backup
    target_partitions: int | None = PARTITIONS  # None: the restore target does not exist
    produced_at_most: dict[int, int] = field(default_factory=dict)  # target partition → records allowed (else 0)
    report: bool = False  # the command's answer is its report on stdout (verify, --dry-run), not an error line


def object_key(topic: str, partition: int, start: int, extension: str = ".json") -> str:
    return f"topics/{topic}/partition={partition}/{topic}+{partition}+{start:010d}{extension}"


# ---------------------------------------------------------------------------------------------------- damage
def _garbage(s3, bucket: str, topic: str) -> None:
    key = object_key(topic, 0, 3)
    size = len(s3.get_object(Bucket=bucket, Key=key)["Body"].read())
    s3.put_object(Bucket=bucket, Key=key, Body=(b"\x00garbage" * size)[:size])  # same size: found while reading


def _deleted(s3, bucket: str, topic: str) -> None:
    s3.delete_object(Bucket=bucket, Key=object_key(topic, 0, 3))


def _truncated(s3, bucket: str, topic: str) -> None:
    key = object_key(topic, 0, 3)
    body = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
    s3.put_object(Bucket=bucket, Key=key, Body=body[: len(body) // 2])


def _bad_name(s3, bucket: str, topic: str) -> None:
    s3.put_object(Bucket=bucket, Key=f"topics/{topic}/partition=0/{topic}+0+first.json", Body=b'{"n": 1}\n')


BACKUP = ["backup", "--once", "--no-progress"]
RESTORE = ["restore", "--no-progress"]
C, K, S, P, D, I = (  # noqa: E741 - exit codes, short for the table
    ConfigError.exit_code,
    KafkaError.exit_code,
    StoreError.exit_code,
    PlanError.exit_code,
    RestoreFailed.exit_code,
    BackupIncomplete.exit_code,
)
assert LayoutError.exit_code == NotInBackup.exit_code == D

CASES = [
    # ------------------------------------------------------------------ the file itself
    Case("file-missing", BACKUP + ["--config", "{tmp}/nowhere.properties"], C, ["{tmp}/nowhere.properties"], raw=""),
    Case("file-is-a-directory", BACKUP + ["--config", "{tmp}"], C, ["{tmp}"], raw=""),
    Case("file-not-utf8", BACKUP, C, ["case.properties", "line 2", "UTF-8"], raw="name=a\ntopics=caf\xe9\n"),
    Case("connect-json-malformed", BACKUP, C, ["case.json"], raw='{"name": "x", "config": {', file="case.json"),
    Case("connect-json-flat-incomplete", BACKUP, C, ["flush.size"], raw='{"name": "x"}', file="case.json"),
    Case("set-without-equals", BACKUP + ["--set", "flush.size"], C, ["--set", "flush.size"]),
    Case("set-unknown-type", BACKUP + ["--set", "flush.size=many"], C, ["flush.size", "many"]),
    # ------------------------------------------------------------------ backup keys
    Case("no-topics", BACKUP, C, ["topics", "topics.regex"], props={"topics": DELETE}),
    Case("no-bucket-key", BACKUP, C, ["s3.bucket.name"], props={"s3.bucket.name": DELETE}),
    Case("deflate-level-out-of-range", BACKUP, C, ["avro.deflate.level", "42"], props={"avro.deflate.level": "42"}),
    Case("flush-size-zero", BACKUP, C, ["flush.size", "0"], props={"flush.size": "0"}),
    Case("flush-size-text", BACKUP, C, ["flush.size", "abc"], props={"flush.size": "abc"}),
    Case("format-unknown", BACKUP, C, ["format.class", "nope"], props={"format.class": "nope"}),
    Case("partitioner-unknown", BACKUP, C, ["partitioner.class", "Nope"], props={"partitioner.class": "Nope"}),
    Case("topics-regex-invalid", BACKUP, C, ["topics.regex", "[a-"], props={"topics": DELETE, "topics.regex": "[a-"}),
    Case(
        "path-format-unterminated-quote",
        BACKUP,
        C,
        ["path.format"],
        props={
            "partitioner.class": "io.confluent.connect.storage.partitioner.TimeBasedPartitioner",
            "path.format": "'year'=YYYY/'month=MM",
            "partition.duration.ms": "3600000",
            "locale": "en-US",
            "timezone": "UTC",
        },
    ),
    Case(
        "time-partitioner-without-duration",
        BACKUP,
        C,
        ["partition.duration.ms"],
        props={
            "partitioner.class": "io.confluent.connect.storage.partitioner.TimeBasedPartitioner",
            "path.format": "'year'=YYYY",
            "locale": "en-US",
            "timezone": "UTC",
        },
    ),
    Case("timezone-unknown", BACKUP, C, ["timezone", "Mars/Phobos"], props={"timezone": "Mars/Phobos"}),
    Case("rotate-interval-negative", BACKUP, C, ["rotate.interval.ms"], props={"rotate.interval.ms": "-5"}),
    Case("compression-unknown", BACKUP, C, ["s3.compression.type", "lzma"], props={"s3.compression.type": "lzma"}),
    Case("store-url-scheme", BACKUP, C, ["store.url", "ftp://"], props={"store.url": "ftp://127.0.0.1:1"}),
    Case("part-size-too-small", BACKUP, C, ["s3.part.size"], props={"s3.part.size": "1"}),
    Case(
        "converter-unknown",
        BACKUP,
        C,
        ["value.converter", "com.example.Nope"],
        props={"value.converter": "com.example.Nope"},
    ),
    Case("extractor-unknown", BACKUP, C, ["timestamp.extractor", "Nope"], props={"timestamp.extractor": "Nope"}),
    Case(
        "schema-compatibility-unknown",
        BACKUP,
        C,
        ["schema.compatibility", "SOMETIMES"],
        props={"schema.compatibility": "SOMETIMES"},
    ),
    Case("service-timeout-negative", BACKUP, C, ["service.timeout.ms"], props={"service.timeout.ms": "-1"}),
    Case("isolation-level-unknown", BACKUP, C, ["isolation.level", "dirty"], props={"isolation.level": "dirty"}),
    Case("kcql-malformed", BACKUP, C, ["connect.s3.kcql"], props={"connect.s3.kcql": "INSERT INTO FROM"}),
    Case("avro-codec-unknown", BACKUP, C, ["avro.codec", "zip"], props={"format.class": "avro", "avro.codec": "zip"}),
    Case(
        "consumer-setting-unknown",
        BACKUP,
        C,
        ["consumer.override.no.such.setting"],
        props={"consumer.override.no.such.setting": "1"},
    ),
    # ------------------------------------------------------------------ backup services
    Case("backup-missing-bucket", BACKUP, S, ["{bucket}-gone"], props={"s3.bucket.name": "{bucket}-gone"}),
    Case(
        "backup-wrong-secret",
        BACKUP,
        S,
        ["access denied", "aws.access.key.id"],
        props={"aws.secret.access.key": "wrong-secret-0123456789"},
    ),
    Case(
        "backup-dead-kafka",
        BACKUP,
        K,
        ["127.0.0.1:1", "service.timeout.ms"],
        props={"bootstrap.servers": "127.0.0.1:1", "service.timeout.ms": "2000"},
    ),
    Case("backup-topic-missing", BACKUP, K, ["{topic}-gone"], props={"topics": "{topic}-gone"}),
    # ------------------------------------------------------------------ restore flags and keys
    Case("from-offset-text", RESTORE + ["--from-offset", "zero"], C, ["--from-offset", "zero"]),
    Case("until-offset-text", RESTORE + ["--until-offset", "0:x"], C, ["--until-offset", "0:x"]),
    Case("from-timestamp-text", RESTORE + ["--from-timestamp", "yesterday"], C, ["--from-timestamp", "yesterday"]),
    Case("until-timestamp-text", RESTORE + ["--until-timestamp", "soon"], C, ["--until-timestamp", "soon"]),
    Case("from-offset-negative", RESTORE + ["--from-offset", "0:-4"], C, ["--from-offset", "-4"]),
    Case("rename-malformed", RESTORE, C, ["topic.rename", "no-colon"], props={"topic.rename": "no-colon"}),
    Case("behavior-on-error-unknown", RESTORE, C, ["behavior.on.error", "shrug"], props={"behavior.on.error": "shrug"}),
    Case("transform-without-type", RESTORE, C, ["transforms.route.type"], props={"transforms": "route"}),
    Case(
        "transform-regex-invalid",
        RESTORE,
        C,
        ["transforms.route.regex"],
        props={
            "transforms": "route",
            "transforms.route.type": "org.apache.kafka.connect.transforms.RegexRouter",
            "transforms.route.regex": "(unclosed",
            "transforms.route.replacement": "x",
        },
    ),
    Case(
        "follow-with-two-kcql-statements",
        RESTORE + ["--follow"],
        C,
        ["--follow", "connect.s3.kcql"],
        props={
            "connect.s3.kcql": "INSERT INTO {target} SELECT * FROM {topic}; "
            "INSERT INTO {target}-2 SELECT * FROM {topic}-2",
            "topics": DELETE,
            "topic.rename": DELETE,
        },
    ),
    Case(
        "transaction-records-zero",
        RESTORE,
        C,
        ["restore.transaction.records"],
        props={"restore.transaction.records": "0"},
    ),
    # ------------------------------------------------------------------ restore targets and buckets
    Case("restore-missing-bucket", RESTORE, S, ["{bucket}-gone"], props={"s3.bucket.name": "{bucket}-gone"}),
    Case("target-too-few-partitions", RESTORE, P, ["{target}", "partition 1"], target_partitions=1),
    Case("target-missing", RESTORE, P, ["{target}", "topic.creation.enable"], target_partitions=None),
    Case(
        "format-typed-with-json-converter",
        RESTORE,
        C,
        ["format.class=avro", "value.converter"],
        props={"format.class": "avro"},
    ),
    Case(
        "format-mismatch",
        RESTORE,
        C,
        ["{topic}", "format.class=bytearray names ByteArray objects ending .bin", "leave format.class out"],
        props={
            "format.class": "bytearray",
            "value.converter": "org.apache.kafka.connect.converters.ByteArrayConverter",
        },
    ),
    Case("topics-dir-elsewhere", RESTORE, C, ["{topic}", "no backed-up objects"], props={"topics.dir": "elsewhere"}),
    Case(
        "restore-dead-kafka",
        RESTORE,
        K,
        ["127.0.0.1:1", "service.timeout.ms"],
        props={"bootstrap.servers": "127.0.0.1:1", "service.timeout.ms": "2000"},
    ),
    # ------------------------------------------------------------------ damaged backups (Spark where they are read)
    Case("object-deleted", RESTORE, I, ["{o0_3}"], damage=_deleted),
    Case("object-truncated", RESTORE, I, ["{o0_3}", "truncated"], damage=_truncated),
    Case("object-name-unparseable", RESTORE, D, ["first.json", "<topic>+<partition>+<offset>"], damage=_bad_name),
    Case(
        "object-garbage",
        RESTORE,
        D,
        ["{o0_3}", "{topic}[0]", "line 1"],
        damage=_garbage,
        produced_at_most={0: 3, 1: PER_PARTITION},
    ),
    Case("dry-run-object-deleted", RESTORE + ["--dry-run"], I, ["{o0_3}", "missing"], damage=_deleted, report=True),
    Case("verify-object-deleted", ["verify"], I, ["{o0_3}", "PROBLEM"], damage=_deleted, report=True),
    Case("verify-missing-bucket", ["verify"], S, ["{bucket}-gone"], props={"s3.bucket.name": "{bucket}-gone"}),
    # ------------------------------------------------------------------ read
    Case("read-offset-text", ["read", "--offset", "first"], C, ["--offset", "first"]),
    Case("read-count-zero", ["read", "--offset", "0:0", "--count", "0"], C, ["--count", "0"]),
    Case("read-past-the-end", ["read", "--offset", "0:100"], D, ["{topic}[0]", "offset 100"]),
    Case("read-partition-absent", ["read", "--offset", "7:0"], D, ["{topic}[7]"]),
    Case("read-topic-absent", ["read", "--offset", "0:0", "--topics", "{topic}-gone"], D, ["{topic}-gone[0]"]),
    # The manifests give each object's record count (the integrity check): the damage is found reading the object.
    Case("read-inside-a-damaged-object", ["read", "--offset", "0:4"], D, ["invalid JSON", "{o0_3}"], damage=_garbage),
    # ------------------------------------------------------------------ status, bucket create
    Case(
        "status-dead-kafka",
        ["status"],
        K,
        ["127.0.0.1:1", "service.timeout.ms"],
        props={"bootstrap.servers": "127.0.0.1:1", "service.timeout.ms": "2000"},
    ),
    Case("status-topic-missing", ["status"], K, ["{topic}-gone"], props={"topics": "{topic}-gone"}),
    Case("bucket-create-invalid-name", ["bucket", "create", "Not_A_Bucket"], S, ["Not_A_Bucket"]),
    Case(
        "bucket-create-refused-credentials",
        ["bucket", "create", "{bucket}-new"],
        S,
        ["{bucket}-new", "access denied"],
        props={"aws.secret.access.key": "wrong-secret-0123456789"},
    ),
]


# ---------------------------------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def golden(engine, s3_client, s3_env, kafka_bootstrap) -> Golden:
    """One backup for the whole module (made in-process on the shared Spark session)."""
    from confluent_kafka import Producer

    from kafka_s3.core.config.sink import SINK
    from kafka_s3.io.kafka.admin import Admin
    from kafka_s3.pipelines.backup.driver import Backup

    topic = f"bad-{uuid.uuid4().hex[:10]}"
    bucket = f"t-{uuid.uuid4().hex[:16]}"
    Admin({"bootstrap.servers": kafka_bootstrap}).create_topic(topic, PARTITIONS, config={"retention.ms": "-1"})
    producer = Producer({"bootstrap.servers": kafka_bootstrap, "enable.idempotence": True})
    for r in records(PARTITIONS, PER_PARTITION):
        producer.produce(topic, value=r["value"], key=r["key"], partition=r["partition"], timestamp=r["timestamp"])
    assert producer.flush(60) == 0
    s3_client.create_bucket(Bucket=bucket)
    raw = {**base_properties(s3_env, kafka_bootstrap, f"golden-{bucket}", topic, bucket), **JSON}
    assert Backup(SINK.parse(raw), engine=engine).run_once().records == PARTITIONS * PER_PARTITION
    return Golden(topic, bucket, tuple(list_keys(s3_client, bucket)))


def base_properties(s3_env, bootstrap: str, name: str, topic: str, bucket: str) -> dict[str, str]:
    return {
        "name": name,
        "topics": topic,
        "flush.size": "3",
        "s3.bucket.name": bucket,
        "store.url": s3_env["endpoint_url"],
        "s3.region": s3_env["region"],
        "aws.access.key.id": s3_env["access_key"],
        "aws.secret.access.key": s3_env["secret_key"],
        "bootstrap.servers": bootstrap,
    }


def copy_bucket(s3, source: str, target: str) -> None:
    for key in list_keys(s3, source):
        s3.copy_object(Bucket=target, Key=key, CopySource={"Bucket": source, "Key": key})


# ---------------------------------------------------------------------------------------------------- the test
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_each_bad_input_exits_with_its_code_and_one_clear_error_changing_nothing(
    case, golden, s3_client, s3_env, kafka_bootstrap, fresh_bucket, tmp_path
):
    from kafka_s3.io.kafka.admin import Admin

    admin = Admin({"bootstrap.servers": kafka_bootstrap})
    command = case.command[0]
    backs_up = command == "backup"
    # A backup writes into an empty bucket of its own; the other commands read the module's backup, or a damaged copy.
    bucket = golden.bucket
    if backs_up or case.damage is not None:
        bucket = fresh_bucket
        if case.damage is not None:
            copy_bucket(s3_client, golden.bucket, bucket)
            case.damage(s3_client, bucket, golden.topic)
    target = f"bad-target-{uuid.uuid4().hex[:10]}"
    if case.target_partitions is not None and command == "restore":
        admin.create_topic(target, case.target_partitions, config={"retention.ms": "-1"})
    name = f"bad-{uuid.uuid4().hex[:8]}"
    ctx = Ctx(golden.topic, target, bucket, name, tmp_path)

    args = [ctx.fmt(a) for a in case.command]
    if case.raw is None:
        props = {**base_properties(s3_env, kafka_bootstrap, name, golden.topic, bucket), **JSON}
        if command in ("restore", "verify", "read", "status"):
            props["topic.rename"] = f"{golden.topic}:{target}"
        for key, value in case.props.items():
            if value is DELETE:
                props.pop(key, None)
            else:
                props[key] = ctx.fmt(value)
        path = str(write_properties(tmp_path / case.file, props))
        args += ["--config", path]
    elif case.raw:
        (tmp_path / case.file).write_bytes(case.raw.encode("latin-1"))
        args += ["--config", str(tmp_path / case.file)]
    before = list_keys(s3_client, bucket)

    result = run_cli(args, timeout=400)

    output = result.stdout + result.stderr
    assert result.returncode == case.code, (result.returncode, result.stdout[-2000:], result.stderr[-3000:])
    errors = [line for line in result.stderr.splitlines() if line.startswith("kafka-s3: error:")]
    if case.report:
        message = result.stdout
        assert not errors, result.stderr[-3000:]
    else:
        assert len(errors) == 1, result.stderr[-3000:]
        message = result.stderr[result.stderr.index(errors[0]) :]  # the error line and any lines it goes on with
    for word in case.words:
        assert ctx.fmt(word) in message, (ctx.fmt(word), message)
    for marker in RAW_OUTPUT:
        assert marker not in output, output[-4000:]

    # Nothing produced or committed past the error.
    assert list_keys(s3_client, bucket) == before, "the command changed the bucket"
    if backs_up:
        tps = [(golden.topic, p) for p in range(PARTITIONS)]
        assert set(admin.group_offsets(f"connect-{name}", tps).values()) == {None}, "a backup committed offsets"
    if command == "restore" and target in admin.topics():
        committed = read_topic(kafka_bootstrap, target)
        everything = read_topic(kafka_bootstrap, target, "read_uncommitted")
        for partition, rows in everything.items():
            assert len(rows) == len(committed[partition]), "records past the fault reached the target log"
            assert len(rows) <= case.produced_at_most.get(partition, 0), (partition, len(rows))
        group = f"kafka-s3-restore-{name}-{golden.topic}"
        progress = admin.group_offsets(group, [(target, p) for p in everything])
        for (_, partition), offset in progress.items():
            assert (offset or 0) <= case.produced_at_most.get(partition, 0), (partition, offset)


def test_the_bad_input_table_holds_at_least_50_distinct_cases():
    assert len(CASES) >= 50 and len({c.id for c in CASES}) == len(CASES)
    json.dumps([c.id for c in CASES])  # ids are plain strings


def test_bucket_create_says_when_the_bucket_already_exists(s3_env, s3_client, remove_bucket, tmp_path):
    """Found by the table: creating a bucket that exists printed "created bucket" (S3 answers our own bucket's
    re-creation with success). It stays a success (scripts may run it every time) but says what happened."""
    name = f"t-{uuid.uuid4().hex[:16]}"
    props = {k: v for k, v in base_properties(s3_env, "127.0.0.1:1", "b", "t", name).items() if "s3" in k or "aws" in k}
    path = str(write_properties(tmp_path / "store.properties", {**props, "store.url": s3_env["endpoint_url"]}))
    try:
        first = run_cli(["bucket", "create", name, "--config", path], timeout=120)
        assert first.returncode == 0 and first.stdout.startswith(f"created bucket {name} at "), first
        again = run_cli(["bucket", "create", name, "--config", path], timeout=120)
        assert again.returncode == 0, again.stderr[-2000:]
        assert again.stdout.startswith(f"bucket {name} already exists at "), again.stdout
        assert "nothing to do" in again.stdout and "created" not in again.stdout, again.stdout
    finally:
        remove_bucket(name)
