"""Fixtures of the security tests: the HTTPS SeaweedFS with least-privilege identities (``secure_s3``), and
configurations bound to it."""

from __future__ import annotations

import pytest
import secure_s3 as server


@pytest.fixture(scope="session")
def secure_s3(tmp_path_factory):
    """The HTTPS SeaweedFS of :mod:`secure_s3`, started once for the run and stopped after it."""
    s3, proc = server.start(tmp_path_factory.mktemp("secure-s3"))
    yield s3
    server.stop(proc)


@pytest.fixture
def secure_config(make_config, secure_s3):
    """``secure_config(identity, topics, source=False, **properties)`` → (raw, parsed) bound to the HTTPS store as
    ``identity`` ("admin", "backup", "restore"), trusting its CA through ``s3.ssl.ca.bundle``."""

    def make(identity: str, topics, source: bool = False, **properties):
        store = {k.replace(".", "__"): v for k, v in secure_s3.settings(identity).items()}
        return make_config(secure_s3.bucket, topics, source=source, **{**store, **properties})

    return make
