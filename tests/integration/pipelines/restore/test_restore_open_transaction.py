"""A restore killed inside a transaction leaves that transaction open on the broker (until its timeout), with the
progress it sent to the restore's group pending. The next run must fence it before it reads its progress: Kafka
refuses to read a group's offsets while a transaction holds pending ones (read_committed), and the first CI run of
``test_signals_cli`` failed so, ``Failed to get committed offsets: Local: Timed out``, exit 4. Deterministic here: the
killed run's open transaction is made by hand (same transactional id, same group, a timeout of minutes), then the
process holding it exits without committing or aborting."""

from __future__ import annotations

import subprocess
import sys

import pytest

from kafka_s3.io.kafka.admin import Admin
from tests.support.restore import restore_progress, run_cli, values_of, write_properties

pytestmark = pytest.mark.integration

# Begins a transaction as a restore task does — a record into the target, the progress into the restore's group —
# and exits like a killed process: no commit, no abort.
_KILLED_INSIDE_A_TRANSACTION = r"""
import os, sys
from confluent_kafka import Consumer, Producer, TopicPartition
bootstrap, transactional_id, group, topic, partition, offset = sys.argv[1:7]
producer = Producer({
    "bootstrap.servers": bootstrap, "transactional.id": transactional_id, "transaction.timeout.ms": "600000",
})
producer.init_transactions(30)
producer.begin_transaction()
producer.produce(topic, b"from the killed run", partition=int(partition))
metadata = Consumer({"bootstrap.servers": bootstrap, "group.id": group}).consumer_group_metadata()
producer.send_offsets_to_transaction([TopicPartition(topic, int(partition), int(offset))], metadata, 30)
producer.flush(30)
os._exit(9)
"""


def _leave_open_transaction(bootstrap: str, name: str, source: str, target: str, partition: int, offset: int):
    base = f"kafka-s3-restore-{name}"
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            _KILLED_INSIDE_A_TRANSACTION,
            bootstrap,
            f"{base}-{source}-{partition}",
            f"{base}-{source}",
            target,
            str(partition),
            str(offset),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 9, done.stderr[-2000:]


@pytest.mark.parametrize("progress_before", ["committed", "none"])
def test_restore_fences_the_open_transaction_of_a_killed_run_and_restores_exactly(
    progress_before, make_config, fresh_bucket, fresh_topic, produce, kafka_bootstrap, tmp_path
):
    topic, target = fresh_topic(2), fresh_topic(2)
    produce(topic, [{"partition": p, "value": b'{"i":%d}' % i} for p in range(2) for i in range(30)])
    raw, _ = make_config(fresh_bucket, topic, flush__size="10")
    backup_props = str(write_properties(tmp_path / "b.properties", raw))
    backed = run_cli(["backup", "--once", "--no-progress", "-c", backup_props])
    assert backed.returncode == 0, backed.stderr[-4000:]
    source_raw, source_config = make_config(
        fresh_bucket, topic, source=True, topic__rename=f"{topic}:{target}", exactly__once__support="required"
    )
    props = str(write_properties(tmp_path / "r.properties", source_raw))
    if progress_before == "committed":
        first = run_cli(["restore", "--no-progress", "-c", props])
        assert first.returncode == 0, first.stderr[-4000:]
        assert restore_progress(kafka_bootstrap, source_config, topic, target) == {0: 30, 1: 30}

    # progress far past what was restored: committed, it would skip records
    _leave_open_transaction(
        kafka_bootstrap, source_raw["name"], topic, target, 0, 25 if progress_before == "none" else 60
    )

    # Apache Kafka withholds the group's offsets while the transaction is open; noida-db shows the committed ones
    withheld = Admin({"bootstrap.servers": kafka_bootstrap}).pending_transactional_offsets(
        f"kafka-s3-restore-{source_raw['name']}-{topic}", [(target, 0), (target, 1)]
    )
    assert withheld in (set(), {(target, 0)})

    again = run_cli(["restore", "--no-progress", "-c", props])
    assert again.returncode == 0, again.stderr[-4000:]
    aborted = f"{target}[0]: a previous run was stopped inside a transaction: aborted it"
    assert (aborted in again.stderr) == bool(withheld), again.stderr[-4000:]
    assert values_of(kafka_bootstrap, target) == values_of(kafka_bootstrap, topic)
    assert restore_progress(kafka_bootstrap, source_config, topic, target) == {0: 30, 1: 30}
