"""The local PostgreSQL server: the database of the Iceberg SQL catalog in the tests and the demo.

Debian's packages provide the binaries (``/usr/lib/postgresql/<version>/bin``; installed with ``apt-get install -y
postgresql`` when they are missing and this runs as root, else a message says what to install). The cluster lives in
``.services/postgres`` (``initdb`` on first start), listens on 127.0.0.1 only, on ``KAFKA_S3_DEV_PG_PORT`` (default
21432), with a password for TCP connections; its superuser ``kafka_s3`` owns the ``iceberg`` database. PostgreSQL
refuses to run as root: as root, the server runs as the ``postgres`` user the package creates (its cluster under the
system's temporary directory when that user cannot reach ``.services``). A server that cannot start is said, and the
other services start all the same.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from tools.processes import _alive, _port_open, _terminate, _wait, state_dir

DEFAULT_PORT = 21432
USER = "kafka_s3"
PASSWORD = "kafka-s3-dev"
DATABASE = "iceberg"
PORT_ENV = "KAFKA_S3_DEV_PG_PORT"
#: a PostgreSQL URL of one's own (``postgresql://user:password@host:port/database``): nothing is started
URL_ENV = "KAFKA_S3_POSTGRES_URL"
SERVER_USER = "postgres"  # the package's system user, who runs the server when we are root


class PostgresUnavailable(Exception):
    """No PostgreSQL binaries here, and none could be installed."""


def _directory() -> Path:
    """``.services/postgres``; as root, when the ``postgres`` user cannot reach it (a checkout under ``/root``), a
    directory of this checkout's own under the system's temporary directory."""
    return _reachable_directory(state_dir())


@functools.cache
def _reachable_directory(services: Path) -> Path:
    if os.geteuid() != 0 or subprocess.run(_as_server_user(["test", "-x", str(services)]), check=False).returncode == 0:
        return services / "postgres"
    digest = hashlib.sha1(str(services).encode()).hexdigest()[:12]
    return Path(tempfile.gettempdir()) / f"kafka-s3-postgres-{digest}"


def url(port: int) -> str:
    """The URL clients use (pyiceberg's SQL catalog takes it as ``uri``)."""
    return f"postgresql://{USER}:{PASSWORD}@127.0.0.1:{port}/{DATABASE}"


def bin_dir(environ: Mapping[str, str] = os.environ, install: bool = True) -> Path:
    """The directory of ``initdb`` and ``pg_ctl``: ``$KAFKA_S3_PG_BIN``, else the newest Debian
    ``/usr/lib/postgresql/<version>/bin``, else the ``PATH``'s; installed from Debian's packages when root."""
    if environ.get("KAFKA_S3_PG_BIN"):
        return Path(environ["KAFKA_S3_PG_BIN"])
    versions = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: int(p.parent.parent.name), reverse=True
    )
    if versions:
        return versions[0].parent
    on_path = shutil.which("initdb")
    if on_path:
        return Path(on_path).resolve().parent
    if install and os.geteuid() == 0 and shutil.which("apt-get"):
        print("installing PostgreSQL from Debian's packages (apt-get install -y postgresql)", flush=True)
        subprocess.run(["apt-get", "update", "-qq"], check=False, stdout=subprocess.DEVNULL)
        done = subprocess.run(
            ["apt-get", "install", "-y", "-qq", "postgresql"],
            check=False,
            stdout=subprocess.DEVNULL,
            env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"},
        )
        if done.returncode == 0:
            return bin_dir(environ, install=False)
    raise PostgresUnavailable(
        "PostgreSQL is not installed: `sudo apt-get install -y postgresql` (Debian/Ubuntu), or set "
        f"KAFKA_S3_PG_BIN to the directory of its initdb and pg_ctl, or {URL_ENV} to a server of your own"
    )


def _as_server_user(command: Sequence[str]) -> list[str]:
    """``command`` as the user the server runs as: ourselves, or ``postgres`` when we are root."""
    if os.geteuid() != 0:
        return list(command)
    return ["runuser", "-u", SERVER_USER, "--", *command]


def pid() -> int | None:
    try:
        return int((_directory() / "data" / "postmaster.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _healthy(port: int) -> bool:
    import psycopg2

    connection = psycopg2.connect(url(port), connect_timeout=2)
    try:
        with connection.cursor() as cursor:
            cursor.execute("select 1")
            return bool(cursor.fetchone() == (1,))
    finally:
        connection.close()


def start_postgres(port: int, environ: Mapping[str, str] = os.environ) -> str:
    """Start (idempotently) the cluster on 127.0.0.1:``port``; returns its URL once the catalog database answers.
    :class:`PostgresUnavailable` when it cannot: no binaries, or a server that would not start (its log named)."""
    binaries = bin_dir(environ)
    try:
        return _start(port, binaries)
    except (subprocess.CalledProcessError, OSError, SystemExit) as exc:
        raise PostgresUnavailable(f"PostgreSQL did not start ({exc}); see {_directory() / 'server.log'}") from exc


def _start(port: int, binaries: Path) -> str:
    base = _directory()
    data = base / "data"
    log = base / "server.log"
    if _alive(pid()):
        if _port_open(port):
            _wait("PostgreSQL", lambda: _healthy(port), 30, log)
            return url(port)
        stop_postgres()  # ours, but on another port: restart it
    base.mkdir(parents=True, exist_ok=True)
    if os.geteuid() == 0:
        shutil.chown(base, SERVER_USER)
    if not (data / "PG_VERSION").exists():
        password_file = base / "password"
        password_file.write_text(PASSWORD + "\n")
        if os.geteuid() == 0:
            shutil.chown(password_file, SERVER_USER)
        subprocess.run(
            _as_server_user(
                [
                    str(binaries / "initdb"),
                    f"--pgdata={data}",
                    f"--username={USER}",
                    f"--pwfile={password_file}",
                    "--auth-local=trust",
                    "--auth-host=scram-sha-256",
                    "--encoding=UTF8",
                    "--no-sync",
                ]
            ),
            check=True,
            stdout=subprocess.DEVNULL,
        )
        password_file.unlink()
    options = f"-c listen_addresses=127.0.0.1 -p {port} -c unix_socket_directories={base} -c fsync=off"
    subprocess.run(
        _as_server_user([str(binaries / "pg_ctl"), "start", f"--pgdata={data}", f"--log={log}", "-o", options]),
        check=True,
        stdout=subprocess.DEVNULL,
    )
    _wait("PostgreSQL", lambda: _port_open(port), 60, log)
    _create_database(port, base)
    _wait("PostgreSQL", lambda: _healthy(port), 30, log)
    return url(port)


def _create_database(port: int, socket_dir: Path) -> None:
    """The catalog's database, created once (through the server's socket, where the superuser needs no password)."""
    import psycopg2

    connection = psycopg2.connect(host=str(socket_dir), port=port, user=USER, dbname="postgres")
    connection.autocommit = True  # create database runs outside a transaction
    try:
        with connection.cursor() as cursor:
            cursor.execute("select 1 from pg_database where datname = %s", (DATABASE,))
            if cursor.fetchone() is None:
                cursor.execute(f"create database {DATABASE}")
    finally:
        connection.close()


def stop_postgres() -> None:
    """Stop our cluster (its data stays in ``.services/postgres``)."""
    running = pid()
    if not _alive(running):
        return
    try:
        binaries = bin_dir(install=False)
    except PostgresUnavailable:
        _terminate(running, grace=15)
        return
    subprocess.run(
        _as_server_user([str(binaries / "pg_ctl"), "stop", f"--pgdata={_directory() / 'data'}", "-m", "fast"]),
        check=False,
        stdout=subprocess.DEVNULL,
    )
    _terminate(running, grace=15)
