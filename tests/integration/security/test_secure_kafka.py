"""Issue 13 item 3: backup, restore, group offsets and the DataFrame reader over SASL_SSL (SCRAM-SHA-512, TLS with a
private CA) with Confluent-style settings and least-privilege ACLs; and errors that say what is wrong: a refused
password, an untrusted certificate, a missing ACL."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from kafka_s3.core.errors import KafkaError
from kafka_s3.core.records import to_dicts
from kafka_s3.io.kafka.admin import Admin
from kafka_s3.io.kafka.reader import read_range
from kafka_s3.pipelines.backup.driver import Backup
from kafka_s3.pipelines.restore.driver import Restore
from kafka_s3.pipelines.status import backup_status
from tests.support.security import ROUTER, grant_backup, grant_restore, kafka_records, props

pytestmark = [pytest.mark.integration, pytest.mark.secure_kafka]


def _read_all(settings: dict, topic: str, partitions: int) -> list[dict]:
    admin = Admin(settings)
    ends = admin.end_offsets([(topic, p) for p in range(partitions)])
    out = []
    for p in range(partitions):
        out += to_dicts(list(read_range(settings, topic, p, 0, ends[(topic, p)])))
    return out


def test_backup_status_and_restore_over_sasl_ssl_with_least_privilege(
    engine, secure_kafka, principal, secure_topic, secure_produce, secure_config, fresh_bucket
):
    topic = secure_topic(2)
    sent = kafka_records(2, 5)
    secure_produce(topic, sent)

    # backup: a principal allowed only READ/DESCRIBE on the topic and READ on its group, settings at top level
    backuper = principal("backup")
    _, sink = secure_config(fresh_bucket, topic, backuper)
    grant_backup(secure_kafka, backuper, topic, f"connect-{sink['name']}")
    summary = Backup(sink, engine=engine).run_once()
    assert summary.records == 10

    # the consumer group's offsets, read back over SASL_SSL by the same principal
    rows = backup_status(sink)
    assert [(r["group"], r["partition"], r["committed"], r["lag"]) for r in rows] == [
        (f"connect-{sink['name']}", 0, 5, 0),
        (f"connect-{sink['name']}", 1, 5, 0),
    ]

    # restore: a principal with WRITE on the target, its transactional ids and its progress groups; the security
    # settings only under the admin./producer./consumer. prefixes, the CA file as ssl.ca.location
    target = f"{topic}-copy"
    Admin(secure_kafka.admin_settings).create_topic(target, 2)
    restorer = principal("restore")
    _, source = secure_config(
        fresh_bucket,
        topic,
        restorer,
        source=True,
        prefixes=("admin.", "producer.", "consumer."),
        ca_location=True,
        **props(ROUTER),
    )
    grant_restore(secure_kafka, restorer, target, source["name"])
    restored = Restore(source, engine).run()
    assert restored.records == 10
    # a committed transaction's markers reach the partitions just after commit_transaction returns: until then the
    # last stable offset (read_committed) stays below the records
    deadline = time.monotonic() + 15
    while len(back := _read_all(secure_kafka.admin_settings, target, 2)) < 10 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert sorted((r["partition"], r["key"], r["value"]) for r in back) == sorted(
        (r["partition"], r["key"], r["value"]) for r in sent
    )
    assert Restore(source, engine).run().records == 0  # its progress (in its group) was committed over SASL_SSL


def test_dataframe_reader_over_sasl_ssl_with_java_style_options(
    spark, secure_kafka, principal, secure_topic, secure_produce
):
    topic = secure_topic(2)
    secure_produce(topic, kafka_records(2, 4))
    reader = principal("reader")
    secure_kafka.allow(reader.user, "TOPIC", topic, ["READ"])
    options = {f"kafka.{k}": v for k, v in secure_kafka.client_config(reader.user, reader.password).items()}
    df = (
        spark.read.format("kafka-s3-topic")
        .option("kafka.bootstrap.servers", secure_kafka.bootstrap)
        .options(**options)
        .option("subscribe", topic)
        .load()
    )
    rows = sorted((r.partition, r.offset, r.key) for r in df.collect())
    assert rows == [(p, i, f"k{p}-{i}".encode()) for p in range(2) for i in range(4)]


def _fails_fast(call) -> tuple[Exception, float]:
    began = time.monotonic()
    with pytest.raises(Exception) as caught:
        call()
    return caught.value, time.monotonic() - began


def test_wrong_password_fails_within_seconds_naming_the_mechanism(
    engine, secure_kafka, principal, secure_topic, secure_config, fresh_bucket
):
    topic = secure_topic(1)
    who = principal("backup")
    who.password = "not-the-password-" + who.password[:6]
    _, sink = secure_config(fresh_bucket, topic, who)
    error, took = _fails_fast(lambda: Backup(sink, engine=engine).run_once())
    text = str(error)
    assert isinstance(error, KafkaError) and error.exit_code == 4, text
    assert "authentication failed" in text.lower() and secure_kafka.mechanism in text, text
    assert who.user in text and who.password not in text, text
    assert took < 10, f"took {took:.1f} s: {text}"


def test_wrong_password_exit_code_from_the_cli(
    secure_kafka, principal, secure_topic, secure_config, fresh_bucket, tmp_path
):
    topic = secure_topic(1)
    who = principal("backup")
    who.password = "wrong-" + who.password[:6]
    raw, _ = secure_config(fresh_bucket, topic, who)
    config = tmp_path / "backup.json"
    config.write_text(json.dumps({"name": raw["name"], "config": raw}))
    done = subprocess.run(
        [sys.executable, "-m", "kafka_s3.cli", "backup", "--once", "--no-progress", "-c", str(config)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == KafkaError.exit_code, done.stderr
    assert "authentication failed" in done.stderr.lower() and who.password not in done.stderr + done.stdout


def test_untrusted_certificate_names_tls_verification(
    engine, secure_kafka, principal, secure_topic, secure_config, fresh_bucket, tmp_path
):
    from tools.secure_kafka import make_ca_and_broker_cert

    other_ca, _ = make_ca_and_broker_cert(tmp_path / "other")
    topic = secure_topic(1)
    who = principal("backup")
    _, sink = secure_config(fresh_bucket, topic, who, ssl__truststore__location=str(other_ca))
    error, took = _fails_fast(lambda: Backup(sink, engine=engine).run_once())
    text = str(error)
    assert isinstance(error, KafkaError), text
    assert "TLS certificate verification" in text and str(other_ca) in text, text
    assert took < 10, f"took {took:.1f} s: {text}"


def test_backup_without_group_acl_names_the_acl(
    engine, secure_kafka, principal, secure_topic, secure_produce, secure_config, fresh_bucket
):
    topic = secure_topic(1)
    secure_produce(topic, kafka_records(1, 3))
    who = principal("backup")
    _, sink = secure_config(fresh_bucket, topic, who)
    group = f"connect-{sink['name']}"
    grant_backup(secure_kafka, who, topic, group, group_ops=())
    error, _ = _fails_fast(lambda: Backup(sink, engine=engine).run_once())
    text = str(error)
    assert isinstance(error, KafkaError), text
    assert f"User:{who.user} lacks READ on group '{group}'" in text, text


def test_backup_without_topic_read_names_the_acl(
    engine, secure_kafka, principal, secure_topic, secure_produce, secure_config, fresh_bucket
):
    topic = secure_topic(1)
    secure_produce(topic, kafka_records(1, 3))
    who = principal("backup")
    _, sink = secure_config(fresh_bucket, topic, who)
    grant_backup(secure_kafka, who, topic, f"connect-{sink['name']}", topic_ops=("DESCRIBE",))
    error, _ = _fails_fast(lambda: Backup(sink, engine=engine).run_once())
    text = str(error)
    assert f"User:{who.user} lacks READ on topic '{topic}'" in text, text


def test_restore_without_transactional_id_acl_names_the_acl(
    engine, secure_kafka, principal, secure_topic, secure_produce, secure_config, fresh_bucket
):
    topic = secure_topic(1)
    secure_produce(topic, kafka_records(1, 3))
    backuper = principal("backup")
    _, sink = secure_config(fresh_bucket, topic, backuper)
    grant_backup(secure_kafka, backuper, topic, f"connect-{sink['name']}")
    Backup(sink, engine=engine).run_once()

    target = f"{topic}-copy"
    Admin(secure_kafka.admin_settings).create_topic(target, 1)
    who = principal("restore")
    _, source = secure_config(fresh_bucket, topic, who, source=True, **props(ROUTER))
    grant_restore(secure_kafka, who, target, source["name"], transactional=False)
    error, _ = _fails_fast(lambda: Restore(source, engine).run())
    text = str(error)
    assert f"User:{who.user} lacks WRITE on transactional-id 'kafka-s3-restore-{source['name']}" in text, text


def test_restore_without_target_read_names_the_acl(
    engine, secure_kafka, principal, secure_topic, secure_produce, secure_config, fresh_bucket
):
    topic = secure_topic(1)
    secure_produce(topic, kafka_records(1, 3))
    backuper = principal("backup")
    _, sink = secure_config(fresh_bucket, topic, backuper)
    grant_backup(secure_kafka, backuper, topic, f"connect-{sink['name']}")
    Backup(sink, engine=engine).run_once()

    target = f"{topic}-copy"
    Admin(secure_kafka.admin_settings).create_topic(target, 1)
    who = principal("restore")
    _, source = secure_config(fresh_bucket, topic, who, source=True, **props(ROUTER))
    grant_restore(secure_kafka, who, target, source["name"], target_ops=("WRITE",))
    error, _ = _fails_fast(lambda: Restore(source, engine).run())
    text = str(error)
    assert f"User:{who.user} lacks READ on topic '{target}'" in text, text


def test_restore_without_target_write_names_the_acl(
    engine, secure_kafka, principal, secure_topic, secure_produce, secure_config, fresh_bucket
):
    topic = secure_topic(1)
    secure_produce(topic, kafka_records(1, 3))
    backuper = principal("backup")
    _, sink = secure_config(fresh_bucket, topic, backuper)
    grant_backup(secure_kafka, backuper, topic, f"connect-{sink['name']}")
    Backup(sink, engine=engine).run_once()

    target = f"{topic}-copy"
    Admin(secure_kafka.admin_settings).create_topic(target, 1)
    who = principal("restore")
    _, source = secure_config(fresh_bucket, topic, who, source=True, **props(ROUTER))
    grant_restore(secure_kafka, who, target, source["name"], target_ops=("READ",))
    error, _ = _fails_fast(lambda: Restore(source, engine).run())
    text = str(error)
    assert f"User:{who.user} lacks WRITE on topic '{target}'" in text, text
