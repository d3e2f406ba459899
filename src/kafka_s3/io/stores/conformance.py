"""Does the store refuse a conditional put on an existing key? Checked once before a backup uses a bucket.

Exactly-once rests on ``If-None-Match: *``: a manifest is the commit intent only because a second, different cut of
the same offsets cannot replace it, and a re-run's object never overwrites a stored one. A store that accepts the
header but ignores it (some S3-compatible servers, gateways that drop it) would let both happen without an error.
The probe writes one small object twice under a fresh key: the second write must fail as "exists" (HTTP 412).
"""

from __future__ import annotations

import contextlib
import logging
import uuid

from kafka_s3.core.errors import ConfigError, ObjectExistsError, StoreError
from kafka_s3.core.store import Store

log = logging.getLogger("kafka_s3.backup")

OPT_OUT_KEY = "store.allow.unconditional.puts"


def probe_key(prefix: str) -> str:
    return f"{prefix}conformance-probe-{uuid.uuid4().hex}"


def check_conditional_put(store: Store, prefix: str, allow_unconditional: bool = False) -> bool:
    """True when the store refuses a conditional put on an existing key. When it does not: a :class:`ConfigError`
    (retrying cannot help) naming the bucket, the probe key and the opt-out key, or (``allow_unconditional``) a
    warning and ``False``."""
    key = probe_key(prefix)
    refused = False
    try:
        store.put(key, b"first")
        try:
            store.put(key, b"second")
        except ObjectExistsError:
            refused = True
    finally:
        with contextlib.suppress(StoreError):  # best effort: a left-over probe object only costs a few bytes
            store.delete([key])
    if refused:
        return True
    message = (
        f"the object store at {getattr(store, 'url', '?')} accepted a second conditional put (If-None-Match: *) of "
        f"the existing object {key}: it ignores the condition, so a re-run or a concurrent backup could replace "
        "stored objects and chunk manifests, and exactly-once cannot hold"
    )
    if not allow_unconditional:
        raise ConfigError(
            f"{message}. Use a store that honours conditional writes, or set {OPT_OUT_KEY}=true to "
            "back up anyway without that guarantee",
            key=OPT_OUT_KEY,
        )
    log.warning("%s (%s=true: backing up anyway)", message, OPT_OUT_KEY)
    return False
