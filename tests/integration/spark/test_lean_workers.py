"""Issue 18 items 3 and 4: a backup and a restore run by the command line on a local Spark session (real Kafka, real
S3, real Spark) leave pandas unimported in the Python worker that ran their tasks.

pandas is ~40 MiB resident per worker and 0.2-0.5 s of CPU to import; in a worker, the only thing that imported it was
pyarrow asking, on its first conversion of a Python list, whether the list was a pandas object
(``kafka_s3.runtime.lean``).
The command's own process is not checked: pyspark imports pandas there itself (the classic session's py4j argument
converter imports ``pyspark.testing.utils``, which imports pandas; the Connect client requires it).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from tests.support.integration import write_properties

pytestmark = pytest.mark.integration

SCRIPT = textwrap.dedent(
    """
    import json
    import sys

    from kafka_s3.cli.main import main
    from kafka_s3.spark.engine import SparkEngine

    backup, restore = sys.argv[1:3]
    assert main(["backup", "--once", "--no-progress", "--master", "local[1]", "--config", backup]) == 0
    assert main(["restore", "--no-progress", "--master", "local[1]", "--config", restore]) == 0

    def probe(slot):  # runs in the session's one Python worker, reused from the restore's task
        import sys

        yield json.dumps({m: m in sys.modules for m in ("pandas", "kafka_s3.pipelines.restore.task")})

    worker = json.loads(SparkEngine(master="local[1]").run_tasks("probe", probe, 1)[0])
    print(json.dumps({"worker": worker}))
    """
)


def test_worker_of_a_local_backup_and_restore_keeps_pandas_unloaded(
    make_config, fresh_bucket, fresh_topic, produce, tmp_path
):
    topic = fresh_topic(1)
    produce(topic, [{"key": b"k%d" % i, "value": b'{"i":%d}' % i} for i in range(4)])
    raw, _ = make_config(fresh_bucket, topic)
    restore = {**raw, "topic.rename": f"{topic}:{topic}-restored", "topic.creation.enable": "true"}
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            SCRIPT,
            str(write_properties(tmp_path / "b.properties", raw)),
            str(write_properties(tmp_path / "r.properties", restore)),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYSPARK_PYTHON": sys.executable},
        check=False,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["worker"]["kafka_s3.pipelines.restore.task"], report  # the probe saw the worker that did the work
    assert not report["worker"]["pandas"], "the Python worker imported pandas"
