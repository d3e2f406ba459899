"""The user's Spark server: a Spark Connect server on 127.0.0.1 that plain commands start on first use and reuse.

Spark's start (a JVM, a SparkContext, Python workers: 7–12 s here) is most of a small command's wall. A plain
command (:func:`kafka_s3.spark.server_state.choose_mode`) therefore asks :func:`for_command` for the user's server:

- running, ready and started with what the command needs (versions, ``spark.*`` settings, the worker environment):
  its URL; the command is a Connect client of it and registers itself (``clients/<pid>``) while it runs;
- none (or one that died, or whose state names a process that is gone): the command runs in-process as before, and
  a new server starts when it ends (not beside it: on a small machine a second JVM starting next to the command's
  own slowed it by a fifth; bench/README.md); the next commands find the server warm;
- one started with something else: stopped and started anew when the command ends if no command uses it, else
  bypassed (this command in-process), saying so in one line;
- still starting (the previous command started it as it ended): this command waits for it, at most a minute,
  then runs in-process.

The server is ``python -m kafka_s3.spark.server DIR``: a small supervisor, leader of a process group of its own,
that runs ``spark-submit`` of pyspark's Connect server (its Python workers on this interpreter), warms its workers
once the port answers, and stops everything when no command has used it for the idle timeout, when the JVM dies
(recording its exit code), or on SIGTERM (``kafka-s3 server stop``). Every wait here is bounded.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import hashlib
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

from kafka_s3.core.errors import ConfigError, SparkServerFailed
from kafka_s3.spark.server_state import (
    ServerIdentity,
    ServerState,
    choose_mode,
    environment_digests,
    idle_timeout,
    state_dir,
)

log = logging.getLogger(__name__)

CONNECT_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
START_TIMEOUT_S = 180.0  # spark-submit until the port answers (a loaded machine takes tens of seconds)
WARM_UP_TIMEOUT_S = 120.0
STOP_TIMEOUT_S = 30.0
LOCK_TIMEOUT_S = 30.0
WAIT_FOR_STARTING_S = 60.0  # a command finding the server starting waits this long for it, then runs in-process
LOG_TAIL_LINES = 15
SUPERVISOR_MODULE = "kafka_s3.spark.server"


# ---------------------------------------------------------------------------------------------------- state on disk
def directory() -> Path:
    """The state directory of this user's server (:func:`kafka_s3.spark.server_state.state_dir`)."""
    return state_dir(os.environ, Path.home())


def _state_file(where: Path) -> Path:
    return where / "state.json"


def read_state(where: Path | None = None) -> ServerState | None:
    try:
        return ServerState.from_json(_state_file(where or directory()).read_text())
    except OSError:
        return None


def _write_state(where: Path, state: ServerState) -> None:
    temporary = where / f"state.json.{os.getpid()}.tmp"
    temporary.write_text(state.to_json())
    os.chmod(temporary, 0o600)
    temporary.replace(_state_file(where))


@contextlib.contextmanager
def _locked(where: Path) -> Iterator[None]:
    """One command at a time decides about the server (two first commands start one server, not two)."""
    where.mkdir(parents=True, exist_ok=True, mode=0o700)
    with open(where / "lock", "a+") as handle:
        deadline = time.monotonic() + LOCK_TIMEOUT_S
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{where / 'lock'} stayed locked for {LOCK_TIMEOUT_S:.0f}s") from None
                time.sleep(0.05)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def log_tail(state: ServerState, lines: int = LOG_TAIL_LINES) -> str:
    """The last lines of the server's log, indented, for a message saying why it is gone."""
    try:
        text = Path(state.log).read_text(errors="replace").splitlines()[-lines:]
    except OSError:
        return f"\n  (no log at {state.log})"
    return "".join(f"\n  {line}" for line in text)


# ---------------------------------------------------------------------------------------------------- processes
def _pid_alive(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie does not: a server killed with -9 may wait for a reaper)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0] != "Z"
    except (OSError, IndexError):
        return True  # no /proc (macOS): the signal answered


def _alive(pid: int) -> bool:
    """Whether ``pid`` is a live supervisor of a server (not a process that took a dead one's pid)."""
    if not _pid_alive(pid):
        return False
    try:
        return SUPERVISOR_MODULE.encode() in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return True


def _port_open(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def running(state: ServerState | None) -> bool:
    return state is not None and state.exit_code is None and _alive(state.pid)


def _code_digest() -> str:
    """A digest of the installed kafka-s3 code (names, sizes, modification times): a server whose workers imported
    other code than this command's is another version, even at the same version number (an editable install)."""
    package = Path(__file__).resolve().parent.parent
    digest = hashlib.sha256()
    for path in sorted(package.rglob("*.py")):
        stat = path.stat()
        digest.update(f"{path.relative_to(package)}:{stat.st_size}:{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:12]


def identity(settings: Mapping[str, str] | None = None) -> ServerIdentity:
    """What a command of this installation needs of a server: these versions, these ``spark.*`` settings, this
    worker environment."""
    version = (
        f"kafka-s3 {metadata.version('kafka-s3')} (code {_code_digest()}), pyspark {metadata.version('pyspark')}, "
        f"Python {sys.executable}"
    )
    return ServerIdentity(version, dict(settings or {}), environment_digests(os.environ))


def submit_command(
    port: int, settings: Mapping[str, str], name: str = "kafka-s3 server", fast_start: bool = True
) -> list[str]:
    """pyspark's Spark Connect server on 127.0.0.1:``port`` with the settings of an in-process session
    (:func:`kafka_s3.spark.session.build_session`: workers on this interpreter, no UI, quiet logs, tasks retried),
    then the command's ``spark.*`` settings; bound to 127.0.0.1 whatever they say. (The dev tooling's Connect server,
    ``make spark-connect``, is the same command under another name, without the fast-start JVM flags.)"""
    import pyspark

    from kafka_s3.spark.session import session_settings

    conf = {
        **session_settings(sys.executable, fast_start),
        **settings,
        "spark.connect.grpc.binding.address": "127.0.0.1",  # this machine only, on the port chosen free
        "spark.connect.grpc.binding.port": str(port),
    }
    spark_home = Path(pyspark.__file__).parent
    command = [str(spark_home / "bin" / "spark-submit"), "--class", CONNECT_CLASS, "--name", name]
    command += ["--master", "local[*,4]"]
    for key, value in conf.items():
        command += ["--conf", f"{key}={value}"]
    return command


def _launch(where: Path, wanted: ServerIdentity) -> ServerState:
    """Start the supervisor (detached: a session and process group of its own, outliving this command) and record
    it as starting. Called with the lock held."""
    where.mkdir(parents=True, exist_ok=True, mode=0o700)
    (where / "clients").mkdir(exist_ok=True)
    logfile = where / "server.log"
    state = ServerState(
        pid=0,
        port=_free_port(),
        started=time.time(),
        identity=wanted,
        log=str(logfile),
        idle_timeout_s=idle_timeout(os.environ),
    )
    env = {k: v for k, v in os.environ.items() if k != "SPARK_REMOTE"}
    with open(logfile, "wb") as out:  # a new server, a new log
        process = subprocess.Popen(
            [sys.executable, "-m", SUPERVISOR_MODULE, str(where)],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            cwd=where,
            env=env,
            start_new_session=True,
        )
    state = state.with_(pid=process.pid)
    _write_state(where, state)
    _LAUNCHED.append(process)  # reaped at exit, so a short-lived launcher leaves no zombie behind
    return state


_LAUNCHED: list[subprocess.Popen[bytes]] = []


def _stop(state: ServerState, where: Path) -> None:
    """SIGTERM to the server's process group, SIGKILL after :data:`STOP_TIMEOUT_S`; its state file removed."""
    if _alive(state.pid):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(state.pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_TIMEOUT_S
        while _pid_alive(state.pid) and time.monotonic() < deadline:
            for process in _LAUNCHED:
                process.poll()
            time.sleep(0.1)
        if _pid_alive(state.pid):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(state.pid, signal.SIGKILL)
    current = read_state(where)
    if current is not None and current.pid == state.pid:
        _state_file(where).unlink(missing_ok=True)


# ---------------------------------------------------------------------------------------------------- clients
def _clients(where: Path) -> list[int]:
    """The commands using the server now (``clients/<pid>``); files of commands that are gone are removed (a client
    killed with -9 never removes its own), counting as their last use."""
    alive = []
    for path in (where / "clients").glob("*"):
        try:
            pid = int(path.name)
        except ValueError:
            continue
        if _pid_alive(pid):
            alive.append(pid)
        else:
            _touch(where / "last-used")
            path.unlink(missing_ok=True)
    return alive


def _touch(path: Path) -> None:
    path.touch()
    os.utime(path)


def _register(where: Path) -> None:
    """Mark this process as using the server until it exits (the idle timeout counts from the last one's end)."""
    (where / "clients").mkdir(parents=True, exist_ok=True)
    mine = where / "clients" / str(os.getpid())
    mine.touch()
    _touch(where / "last-used")

    def release() -> None:
        with contextlib.suppress(OSError):
            _touch(where / "last-used")
            mine.unlink(missing_ok=True)

    atexit.register(release)


# ---------------------------------------------------------------------------------------------------- commands
def for_command(master: str | None, remote: str | None, settings: Mapping[str, str] | None = None) -> str | None:
    """The URL of the user's server for a command of this mode and ``settings``, or None: the command runs as it
    would without a server (``--master``, ``--remote``, ``$SPARK_REMOTE``, the opt-out; or in-process, this time).
    Waits for a server that is starting, at most :data:`WAIT_FOR_STARTING_S`; says in one line what it did to a
    server that was not fit to use."""
    if choose_mode(master, remote, os.environ) != "server":
        return None
    where = directory()
    try:
        wanted = identity(settings)
        with _locked(where):
            found = _attach(where, wanted)
        return _wait_for_starting(where, found) if isinstance(found, ServerState) else found
    except (OSError, TimeoutError, ConfigError) as exc:
        log.warning("the Spark server cannot be used (%s): this command runs Spark in-process", exc)
        return None


def _attach(where: Path, wanted: ServerIdentity) -> str | ServerState | None:
    """The URL of a fit server that is up (this command registered as its client), the state of a fit one that is
    starting, or None (this command in-process; a server started or stopped as said)."""
    state = read_state(where)
    if state is not None and not running(state):
        ended = f"ended with exit code {state.exit_code}" if state.exit_code is not None else "is not running"
        log.warning(
            "the Spark server %s (pid %d, log %s) %s: a new one starts when this command ends; this command runs "
            "Spark in-process%s",
            state.url,
            state.pid,
            state.log,
            ended,
            log_tail(state) if state.exit_code is not None else "",
        )
        _state_file(where).unlink(missing_ok=True)
        state = None
    if state is not None:
        differences = state.identity.differences(wanted)
        if differences:
            if _clients(where):
                log.warning(
                    "the Spark server %s runs with other settings (%s) and another command uses it: this command "
                    "runs Spark in-process",
                    state.url,
                    ", ".join(differences),
                )
                return None
            log.warning(
                "the Spark server %s runs with other settings (%s): stopped, a new one starts when this command ends; "
                "this command runs Spark in-process",
                state.url,
                ", ".join(differences),
            )
            _stop(state, where)
            state = None
    if state is None:
        _launch_when_done(where, wanted)
        log.info(
            "starting a Spark server for the next commands when this one ends (log %s); this command runs Spark "
            "in-process",
            where / "server.log",
        )
        return None
    if not state.ready or not _port_open(state.port):
        return state  # starting: the caller waits for it, without the lock
    _register(where)
    return state.url


def _wait_for_starting(where: Path, state: ServerState) -> str | None:
    """A server that is starting (the previous command started it as it ended): waiting for it, at most
    :data:`WAIT_FOR_STARTING_S`, costs less than a Spark of this command's own starting beside it on a small machine
    (bench/README.md); one that is not up by then, or goes, leaves this command in-process."""
    log.info("the Spark server %s is starting: waiting for it (at most %.0fs)", state.url, WAIT_FOR_STARTING_S)
    deadline = time.monotonic() + WAIT_FOR_STARTING_S
    while time.monotonic() < deadline:
        current = read_state(where)
        if current is None or current.pid != state.pid or not running(current):
            break
        if current.ready and _port_open(current.port):
            with _locked(where):
                if read_state(where) == current:
                    _register(where)
                    return current.url
            break
        time.sleep(0.2)
    log.info("the Spark server %s is not up: this command runs Spark in-process", state.url)
    return None


_WHEN_DONE: list[Path] = []


def _launch_when_done(where: Path, wanted: ServerIdentity) -> None:
    """Start the server when this process ends, not beside its own Spark: on a small machine a second JVM starting
    next to the command's would slow the command down (bench/README.md, "The user's Spark server"). Unless another
    command started one meanwhile; once per process."""
    if where in _WHEN_DONE:
        return
    _WHEN_DONE.append(where)

    def launch() -> None:
        with contextlib.suppress(OSError, TimeoutError), _locked(where):
            if not running(read_state(where)):
                _launch(where, wanted)

    atexit.register(launch)


def status() -> ServerState | None:
    """The running server's state, or None. A state file naming a process that is gone is removed."""
    where = directory()
    state = read_state(where)
    if state is None or running(state):
        return state
    with contextlib.suppress(OSError, TimeoutError), _locked(where):
        if read_state(where) == state:
            _state_file(where).unlink(missing_ok=True)
    return None


def start(timeout: float = START_TIMEOUT_S) -> tuple[ServerState, bool]:
    """Start the server (unless one fit for a plain command runs) and wait until it is ready: (its state, whether it
    was started now). One that fails to start is a :class:`~kafka_s3.core.errors.SparkServerFailed` ending with the
    tail of its log."""
    where = directory()
    wanted = identity()
    with _locked(where):
        state = read_state(where)
        if running(state) and state is not None and not state.identity.differences(wanted):
            started_now = False
        else:
            if state is not None:
                if running(state):
                    log.warning(
                        "the Spark server %s runs with other settings (%s): restarting it",
                        state.url,
                        ", ".join(state.identity.differences(wanted)),
                    )
                _stop(state, where)
            state = _launch(where, wanted)
            started_now = True
    return _wait_ready(where, state, timeout), started_now


def _wait_ready(where: Path, state: ServerState, timeout: float) -> ServerState:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for process in _LAUNCHED:
            process.poll()
        current = read_state(where)
        if current is not None and current.pid == state.pid:
            if current.ready:
                return current
            state = current
        if current is None or current.exit_code is not None or not _pid_alive(state.pid):
            raise SparkServerFailed(f"the Spark server failed to start (log {state.log}):{log_tail(state)}")
        time.sleep(0.2)
    _stop(state, where)
    raise SparkServerFailed(f"the Spark server did not start within {timeout:.0f}s (log {state.log}):{log_tail(state)}")


def stop() -> ServerState | None:
    """Stop the server (its JVM and Python workers); the state it had, or None when none ran."""
    where = directory()
    if read_state(where) is None:
        return None
    with _locked(where):
        state = read_state(where)
        if state is None:
            return None
        was_running = running(state)
        _stop(state, where)
        _state_file(where).unlink(missing_ok=True)
    return state if was_running else None


# ---------------------------------------------------------------------------------------------------- the supervisor
class _Supervisor:
    """``python -m kafka_s3.spark.server DIR``: runs the server recorded in ``DIR/state.json`` until it is idle for
    its timeout, its JVM dies, or SIGTERM."""

    def __init__(self, where: Path):
        self.where = where
        state = read_state(where)
        if state is None or state.pid != os.getpid():
            raise SystemExit(f"{_state_file(where)} does not name this process ({os.getpid()})")
        self.state = state
        self.stopping = False
        self.jvm: subprocess.Popen[bytes] | None = None

    def run(self) -> int:
        signal.signal(signal.SIGTERM, self._stop_requested)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        print(f"kafka-s3 server: starting on {self.state.url} ({self.state.identity.version})", flush=True)
        import pyspark

        env = {
            **os.environ,
            "SPARK_LOCAL_IP": "127.0.0.1",
            "PYSPARK_PYTHON": sys.executable,
            "SPARK_HOME": str(Path(pyspark.__file__).parent),
        }
        self.jvm = subprocess.Popen(
            submit_command(self.state.port, self.state.identity.settings), stdin=subprocess.DEVNULL, env=env
        )
        code = self._serve()
        self._shutdown()
        return code

    def _stop_requested(self, *_: Any) -> None:
        self.stopping = True

    def _serve(self) -> int:
        assert self.jvm is not None
        began = time.monotonic()
        deadline = began + START_TIMEOUT_S
        while not _port_open(self.state.port):
            if self.stopping:
                return 0
            if self.jvm.poll() is not None:
                return self._died(self.jvm.returncode)
            if time.monotonic() > deadline:
                print(f"kafka-s3 server: no answer on port {self.state.port} after {START_TIMEOUT_S:.0f}s", flush=True)
                return self._died(-1)
            time.sleep(0.2)
        answering = time.monotonic()
        self._warm_up()
        self.state = self.state.with_(ready=True)
        _write_state(self.where, self.state)
        _touch(self.where / "last-used")
        ready = time.monotonic()
        print(
            f"kafka-s3 server: ready on {self.state.url} after {ready - began:.1f}s (Spark Connect answering after "
            f"{answering - began:.1f}s, its Python workers warm {ready - answering:.1f}s later)",
            flush=True,
        )
        tick = min(5.0, max(0.2, self.state.idle_timeout_s / 10))
        while not self.stopping:
            if self.jvm.poll() is not None:
                return self._died(self.jvm.returncode)
            if self._idle():
                print(f"kafka-s3 server: idle for {self.state.idle_timeout_s:.0f}s: stopping", flush=True)
                return 0
            time.sleep(tick)
        print("kafka-s3 server: stopping (SIGTERM)", flush=True)
        return 0

    def _idle(self) -> bool:
        """Unused for the idle timeout: then the state file goes first, under the lock, so that no command attaches
        to a server that is stopping (the next one starts a new server)."""
        if _clients(self.where) or self._idle_for() < self.state.idle_timeout_s:
            return False
        try:
            with _locked(self.where):
                if _clients(self.where) or self._idle_for() < self.state.idle_timeout_s:
                    return False
                _state_file(self.where).unlink(missing_ok=True)
        except (OSError, TimeoutError):
            return False
        return True

    def _idle_for(self) -> float:
        try:
            last = (self.where / "last-used").stat().st_mtime
        except OSError:
            last = self.state.started
        return time.time() - max(last, self.state.started)

    def _warm_up(self) -> None:
        """Start the server's Python workers and import the task modules in them, in the session the commands share,
        so that the next command finds them warm (a failure here only costs that command the start)."""
        try:
            subprocess.run(
                [sys.executable, "-c", f"from {SUPERVISOR_MODULE} import warm_up; warm_up({self.state.url!r})"],
                stdin=subprocess.DEVNULL,
                timeout=WARM_UP_TIMEOUT_S,
                check=True,
            )
        except (subprocess.SubprocessError, OSError) as exc:
            print(f"kafka-s3 server: warming the workers failed ({exc}); the first command warms them", flush=True)

    def _died(self, code: int) -> int:
        print(f"kafka-s3 server: the Spark Connect server exited with code {code}", flush=True)
        current = read_state(self.where)
        if current is not None and current.pid == os.getpid():
            _write_state(self.where, current.with_(exit_code=code))
        return 1

    def _shutdown(self) -> None:
        """The JVM and its Python workers (the process group) stopped; the state file removed unless it records a
        death (the next command reports it)."""
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(os.getpgid(0), signal.SIGTERM)
        if self.jvm is not None:
            try:
                self.jvm.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.jvm.kill()
                self.jvm.wait()
        current = read_state(self.where)
        if current is not None and current.pid == os.getpid() and current.exit_code is None:
            _state_file(self.where).unlink(missing_ok=True)
        print("kafka-s3 server: stopped", flush=True)


def warm_up(url: str) -> None:
    """One job on the server at ``url`` importing the task modules in a Python worker per core (the shared session's
    workers, which every later command reuses)."""
    from kafka_s3.spark.session import _import_modules, build_remote_session

    session = build_remote_session(url, "kafka-s3 server warm-up")
    slots = max(1, os.cpu_count() or 1)
    session.range(0, slots, 1, slots).mapInArrow(_import_modules, "n long").collect()


if __name__ == "__main__":
    sys.exit(_Supervisor(Path(sys.argv[1])).run())
