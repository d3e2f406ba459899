"""Every Schema Registry request is bounded, and its failure names the registry (the "No silent loss II" issue,
item 5: a registry that accepts TCP and never answered held ``backup`` and ``restore --schemas`` silent for minutes;
a refused connection said "Connection refused" without saying where).

The servers here are sockets on the loopback: one that accepts connections and never answers, and a closed port.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable

import pytest

from kafka_s3.io.schema_registry.client import registry_client
from kafka_s3.io.schema_registry.subjects import SchemaRegistryError, registry_for, save_subjects

BOUND_S = 90.0  # only guards the test against hanging: far above any timeout set here, never a timing claim


class SilentRegistry:
    """Accepts TCP connections and never answers a byte."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.held: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                self.held.append(self.sock.accept()[0])
            except OSError:
                return

    def close(self) -> None:
        self.sock.close()
        for conn in self.held:
            conn.close()


@pytest.fixture
def silent():
    registry = SilentRegistry()
    yield registry
    registry.close()


def closed_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"


def outcome(call: Callable[[], object]) -> BaseException | None:
    """What ``call`` raised, run in a thread so that a call that never returns fails the test instead of hanging it."""
    raised: list[BaseException] = []

    def run() -> None:
        try:
            call()
        except BaseException as exc:
            raised.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(BOUND_S)
    assert not thread.is_alive(), "the registry call never returned"
    return raised[0] if raised else None


def test_saving_subjects_from_a_registry_that_never_answers_fails_within_service_timeout_naming_it(silent):
    client = registry_for({"schemas.registry.url": silent.url, "service.timeout.ms": "300"})
    assert client is not None
    error = outcome(lambda: save_subjects(client, "orders", 0))
    assert isinstance(error, SchemaRegistryError), error
    assert silent.url in str(error) and "orders" in str(error)


def test_a_refused_connection_names_the_registry_url():
    url = closed_url()
    client = registry_for({"value.converter.schema.registry.url": url, "service.timeout.ms": "300"})
    assert client is not None
    error = outcome(lambda: save_subjects(client, "orders", 0))
    assert isinstance(error, SchemaRegistryError) and SchemaRegistryError.exit_code == 4
    assert url in str(error) and "refused" in str(error).lower(), error


def test_the_converters_client_has_a_timeout_too(silent):
    """A converter's client (tasks) has no service.timeout.ms of its own: it gets the default, never none."""
    client = registry_client({"url": silent.url, "max.retries": 0})
    error = outcome(lambda: client.get_subjects())
    assert error is not None and "timeout" in type(error).__name__.lower() + str(error).lower(), error


@pytest.mark.parametrize("step", ["plan", "import"])
def test_restoring_subjects_into_a_registry_that_never_answers_fails_naming_it(silent, step):
    """``restore --schemas`` (and its dry run) against a target registry that accepts TCP and never answers."""
    from kafka_s3.core.schemas import SavedSchemas, SubjectVersion
    from kafka_s3.io.schema_registry.subjects import import_subjects, predict_ids

    saved = SavedSchemas("orders", 0, {"orders-value": (SubjectVersion(1, 7, '"string"'),)})
    client = registry_for({"schemas.registry.url": silent.url, "service.timeout.ms": "300"})
    assert client is not None
    error = outcome(lambda: (predict_ids if step == "plan" else import_subjects)(client, saved))
    assert isinstance(error, SchemaRegistryError), error
    assert silent.url in str(error) and "orders-value" in str(error)
