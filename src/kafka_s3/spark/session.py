"""The one place a SparkSession is built.

Defaults are those measured to matter on small machines: workers run this very Python (so they have
pyarrow and kafka-s3), the UI and console progress are off, logs are quiet, and `spark.*` keys from the connector
configuration are applied last so operators can tune anything.

With a Spark Connect URL (``--remote sc://host:port``, or ``$SPARK_REMOTE``) the session is a Connect client of a
long-running server instead: no JVM starts here, the same jobs run on the server's executors (whose Python workers
must be able to import kafka-s3), and only runtime settings can be applied (a static one is a configuration error
naming the key, as the server fixed it when it started).
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sys
import uuid
from collections.abc import Iterator, Mapping
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import urlsplit

from kafka_s3.core.errors import ConfigError
from kafka_s3.spark.java import require_java

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import SparkSession

DEFAULT_MASTER = "local[*]"
REMOTE_ENV = "SPARK_REMOTE"

# JVM flags that halve session start-up and trim ~80 MB of resident memory on small machines (local masters).
FAST_START_JVM_FLAGS = "-XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xms64m -XX:ReservedCodeCacheSize=64m"


def _log4j_config() -> str:
    return str(resources.files("kafka_s3.spark").joinpath("log4j2.properties"))


def remote_url(master: str | None = None, remote: str | None = None) -> str | None:
    """The Spark Connect URL a session should use, or None for a classic (in-process JVM) session.

    ``--remote`` wins, then a ``--master`` given as ``sc://...``; an explicit ``--master`` otherwise means a classic
    session even when ``$SPARK_REMOTE`` is set; without either, ``$SPARK_REMOTE`` decides."""
    if remote:
        return remote
    if master:
        return master if master.startswith("sc://") else None
    return os.environ.get(REMOTE_ENV) or None


def require_runtime(master: str | None = None, remote: str | None = None) -> None:
    """Fail now, saying what to install, when a session of ``master``/``remote`` could not start on this machine: a
    classic session starts a JVM here (Java 17 or newer, :func:`kafka_s3.spark.java.require_java`); a Spark Connect
    session runs it on the server. Commands call it before they touch Kafka or the object store."""
    if remote_url(master, remote) is None:
        require_java()


def is_remote(session: SparkSession) -> bool:
    """Whether ``session`` is a Spark Connect client (no SparkContext, no JVM in this process)."""
    from pyspark.sql.connect.session import SparkSession as RemoteSession

    return isinstance(session, RemoteSession)


def build_session(
    master: str | None = None,
    app_name: str = "kafka-s3",
    conf: Mapping[str, str] | None = None,
    fast_start: bool | None = None,
    warm_up: bool = True,
    data_sources: bool = True,
    remote: str | None = None,
) -> SparkSession:
    """Get or create the SparkSession for a kafka-s3 job.

    ``master`` defaults to ``$KAFKA_S3_SPARK_MASTER`` then ``local[*]``; ``conf`` holds extra ``spark.*`` settings;
    ``fast_start`` adds JVM flags that trade peak JIT performance for a faster start (default: on for local masters,
    overridable with ``$KAFKA_S3_SPARK_FAST_START=0/1``). ``remote`` (or ``$SPARK_REMOTE``, see :func:`remote_url`)
    makes it a Spark Connect session of the server at that URL (:func:`build_remote_session`).
    """
    url = remote_url(master, remote)
    if url:
        session = build_remote_session(url, app_name, conf)
        if data_sources:
            register_data_sources(session)
        return session
    require_java()  # a JVM that cannot start fails as one line saying what to install, not as JAVA_GATEWAY_EXITED
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    master = master or os.environ.get("KAFKA_S3_SPARK_MASTER") or DEFAULT_MASTER
    if master.startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    if fast_start is None:
        fast_start = os.environ.get("KAFKA_S3_SPARK_FAST_START", "1" if master.startswith("local") else "0") == "1"

    from pyspark.sql import SparkSession

    settings = session_settings(os.environ["PYSPARK_PYTHON"], fast_start)
    if master.startswith("local") and "," not in master:
        master = master[:-1] + ",4]" if master.endswith("]") else master  # local[N,F]: let Spark retry tasks
    settings.update(conf or {})
    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in settings.items():
        builder = builder.config(key, value)
    with _without_remote_env():  # an explicit master: PySpark would otherwise follow $SPARK_REMOTE
        session = builder.getOrCreate()
    session.sparkContext.setLogLevel("WARN")
    if data_sources:  # costs two Python helper processes (~100 MB): jobs that only run tasks skip it
        register_data_sources(session)
    if warm_up:
        warm_up_workers(session)
    return session


def session_settings(python: str, fast_start: bool) -> dict[str, str]:
    """The Spark settings kafka-s3's sessions start with, in-process or as the user's server: workers on ``python``,
    no UI, quiet logs, Python workers reused and started from pyspark's bytecode, tasks retried."""
    java_opts = f"-Dlog4j2.configurationFile=file:{_log4j_config()}"
    if fast_start:
        java_opts += " " + FAST_START_JVM_FLAGS
    return {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": "4",
        "spark.log.structuredLogging.enabled": "false",
        "spark.python.worker.reuse": "true",
        "spark.driver.extraJavaOptions": java_opts,
        "spark.executor.extraJavaOptions": java_opts,
        "spark.pyspark.python": python,
        "spark.executorEnv.PYSPARK_PYTHON": python,
        # Spark's daemon and the workers it forks run the installed pyspark's bytecode, not pyspark.zip's source
        # when both are the same pyspark (kafka_s3.spark.daemon): less memory and CPU per worker.
        "spark.python.daemon.module": "kafka_s3.spark.daemon",
        # Tasks are idempotent (deterministic names, conditional creates), so Spark may retry them freely.
        "spark.task.maxFailures": "4",
    }


@contextlib.contextmanager
def _without_remote_env() -> Iterator[None]:
    saved = os.environ.pop(REMOTE_ENV, None)
    try:
        yield
    finally:
        if saved is not None:
            os.environ[REMOTE_ENV] = saved


def build_remote_session(url: str, app_name: str = "kafka-s3", conf: Mapping[str, str] | None = None) -> SparkSession:
    """A Spark Connect session on the server at ``url`` (``sc://host:port[/;param=value...]``), checked to answer.

    Commands share one server-side session per server (its id kept in ``sessions_file()``, or the URL's
    ``session_id``) and leave it open when they end: a Connect server starts a set of Python workers per session,
    so a new session per command would pay a cold Python worker (seconds) in every run. A session the server has
    closed meanwhile (idle timeout, restart) is replaced by a new one.

    The server's own settings (master, executors, Python of its workers, ``spark.task.maxFailures``...) are the
    server's: ``conf`` may only hold runtime settings (they stay in the shared session), and one the server refuses
    (a static or core setting) is a :class:`ConfigError` naming the key. An unreachable server is a
    :class:`ConfigError` naming the URL."""
    if not url.startswith("sc://"):
        raise ConfigError(f"Spark Connect URL must look like sc://host:port, got {url!r}", key="--remote")
    _check_reachable(url)
    try:
        session = _connect(url, app_name, _session_id(url))
    except _SessionClosed:
        session = _connect(url, app_name, _session_id(url, renew=True))
    for key, value in (conf or {}).items():
        try:
            session.conf.set(key, value)
        except Exception as exc:
            session.stop()
            raise ConfigError(
                f"{key}: cannot be set over Spark Connect ({url}) — set it where the Connect server starts "
                f"({_first_line(exc)})",
                key=key,
            ) from exc
    return cast("SparkSession", session)  # the Connect session stands in for the classic one (same DataFrame API)


class _SessionClosed(Exception):
    pass


CONNECT_TIMEOUT_S = 10.0


def _check_reachable(url: str) -> None:
    """Fail at once on a server that does not accept connections (the Connect client would retry for minutes)."""
    parts = urlsplit(url.split("/;", 1)[0])
    host, port = parts.hostname or "localhost", parts.port or 15002
    try:
        with socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S):
            pass
    except OSError as exc:
        raise ConfigError(
            f"Spark Connect server {url} is not reachable ({host}:{port}: {exc.strerror or exc})", key="--remote"
        ) from exc


def _connect(url: str, app_name: str, session_id: str | None) -> Any:
    from pyspark.sql.connect.session import SparkSession as RemoteSession

    full = _with_param(_with_param(url, "user_agent", _user_agent(app_name)), "session_id", session_id)
    session: Any = RemoteSession.builder.remote(full).create()
    if session_id:
        session.release_session_on_close = False  # the next command reuses it (and its warm Python workers)
    try:
        session.version  # noqa: B018 (the first call connects: fail here, naming the server, not in a job)
    except Exception as exc:
        session.release_session_on_close = False
        session.stop()
        if "SESSION_CLOSED" in str(exc) and session_id and "session_id=" not in url:
            raise _SessionClosed() from exc
        raise ConfigError(f"Spark Connect server {url} did not answer: {_first_line(exc)}", key="--remote") from exc
    return session


def sessions_file() -> Path:
    """Where the ids of the shared Spark Connect sessions are kept, one per server (``$KAFKA_S3_CONNECT_SESSIONS``,
    default ``~/.cache/kafka-s3/spark-connect-sessions.json``)."""
    configured = os.environ.get("KAFKA_S3_CONNECT_SESSIONS")
    if configured:
        return Path(configured)
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "kafka-s3" / "spark-connect-sessions.json"


def _session_id(url: str, renew: bool = False) -> str | None:
    """The shared session's id for the server at ``url``: the URL's own ``session_id`` (then None: it is in the URL),
    else the kept one, else (or with ``renew``) a new one, kept. None when nothing can be kept (a session per run)."""
    if "session_id=" in url:
        return None
    server = url.split("/;", 1)[0].rstrip("/")
    path = sessions_file()
    try:
        known = json.loads(path.read_text()) if path.exists() else {}
        if not isinstance(known, dict):
            known = {}
    except (OSError, ValueError):
        known = {}
    if not renew and isinstance(known.get(server), str):
        return str(known[server])
    known[server] = str(uuid.uuid4())
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        temporary.write_text(json.dumps(known, indent=1, sort_keys=True))
        temporary.replace(path)
    except OSError:
        return None
    return str(known[server])


def _with_param(url: str, name: str, value: str | None) -> str:
    """``url`` with ``;name=value`` added (unless the URL names it, or value is None)."""
    if value is None or f"{name}=" in url:
        return url
    return f"{url};{name}={value}" if "/;" in url else f"{url.rstrip('/')}/;{name}={value}"


def _user_agent(app_name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in app_name)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


# Modules every backup/restore task needs; importing them once per Python worker up front moves seconds of start-up
# out of the first cycle (workers are reused for every later task).
WORKER_MODULES = (
    "confluent_kafka",
    "boto3",
    "fastavro",
    "pyarrow.parquet",
    "kafka_s3.pipelines.backup.task",
    "kafka_s3.pipelines.restore.task",
    "kafka_s3.pipelines.backup.partition",
    "kafka_s3.pipelines.read.reader",
    "kafka_s3.io.kafka.reader",
    "kafka_s3.io.stores.s3",
    "kafka_s3.core.formats.avro",
    "kafka_s3.core.formats.parquet",
    "kafka_s3.core.formats.json",
    "kafka_s3.core.formats.bytearray",
    "kafka_s3.core.converters.json",
    "kafka_s3.core.partitioners.time_based",
    "kafka_s3.core.partitioners.field",
)


def _import_modules(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    import importlib

    import pyarrow as pa

    from kafka_s3.runtime.lean import keep_pandas_unloaded

    keep_pandas_unloaded()  # before any module builds an Arrow value from Python ones (kafka_s3.runtime.lean)
    for batch in batches:
        for name in WORKER_MODULES:
            importlib.import_module(name)
        yield pa.RecordBatch.from_pydict({"n": [batch.num_rows]})


def warm_up_workers(session: SparkSession) -> None:
    """Start one Python worker per core and import the task modules in it (part of start-up, not of any cycle).
    A Connect server's workers outlive the sessions (warm after the first job): nothing to do there."""
    if is_remote(session):
        return
    slots = max(1, session.sparkContext.defaultParallelism)
    session.range(0, slots, 1, slots).mapInArrow(_import_modules, "n long").collect()


def register_data_sources(session: SparkSession) -> None:
    """Make ``spark.read.format("kafka-s3-topic")`` (Kafka) and ``"kafka-s3"`` (a backup) available, with filter
    pushdown to Python data sources on (``"kafka-s3"`` plans by the filters; Spark refuses a source that takes
    filters while it is off)."""
    from kafka_s3.spark.backup_source import BackupDataSource
    from kafka_s3.spark.kafka_source import KafkaTopicDataSource

    session.conf.set("spark.sql.python.filterPushdown.enabled", "true")

    session.dataSource.register(KafkaTopicDataSource)
    session.dataSource.register(BackupDataSource)


def spark_settings(config_values: Mapping[str, str]) -> dict[str, str]:
    """The ``spark.*`` keys of a connector configuration (passed through to the session)."""
    return {k: str(v) for k, v in config_values.items() if k.startswith("spark.")}
