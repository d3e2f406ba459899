"""Where and how to reach the object store, resolved once on the driver and shipped to Spark tasks.

A :class:`StoreSpec` is a frozen, picklable value: Spark tasks receive it and open their own client (boto3 clients
and connection pools cannot be pickled). Resolution happens on the driver so every task sees the same endpoint,
region and credentials source, and mistakes surface as :class:`~kafka_s3.core.errors.ConfigError` before any job starts.
"""

from __future__ import annotations

import base64
import binascii
import os
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, ClassVar
from urllib.parse import urlparse
from urllib.request import url2pathname

from kafka_s3.core.config.model import REDACTED, Config
from kafka_s3.core.errors import ConfigError

if TYPE_CHECKING:
    from kafka_s3.core.store import Store

MiB = 1024 * 1024
DEFAULT_PART_SIZE = 25 * MiB
DEFAULT_MEMORY_BUFFER_BYTES = 32 * MiB  # the defaults of upload.buffer.memory.bytes and .total.bytes
DEFAULT_MEMORY_BUDGET_BYTES = 64 * MiB
ASSUME_ROLE_PROVIDERS = (
    "AwsAssumeRoleCredentialsProvider",
    "io.confluent.connect.s3.auth.AwsAssumeRoleCredentialsProvider",
)


@dataclass(frozen=True, repr=False)
class StoreSpec:
    """Resolved store settings; ``repr``/``str`` hide secrets, pickling keeps them (tasks need them)."""

    SECRETS: ClassVar[tuple[str, ...]] = ("secret_access_key", "sse_customer_key", "proxy_password")

    store_class: str  # registry name ("s3", "local") or dotted path of a user Store class taking a StoreSpec
    bucket: str
    region: str
    endpoint_url: str | None = None  # None: AWS
    local_root: str | None = None  # directory holding the bucket directories (file:/// store.url)
    path_style: bool = True
    access_key_id: str | None = None  # None: boto3's default credentials chain
    secret_access_key: str | None = None
    role_arn: str | None = None  # assume this role through STS, with auto-refreshing credentials
    role_session_name: str = "kafka-s3"
    role_external_id: str | None = None
    part_retries: int = 3
    retry_backoff_ms: int = 200
    part_size: int = DEFAULT_PART_SIZE
    memory_buffer_bytes: int = DEFAULT_MEMORY_BUFFER_BYTES
    memory_budget_bytes: int = DEFAULT_MEMORY_BUDGET_BYTES
    sse_algorithm: str | None = None  # AES256, aws:kms, aws:kms:dsse
    sse_kms_key_id: str | None = None
    sse_customer_key: str | None = None  # base64 of 32 bytes (SSE-C)
    acl: str | None = None
    proxy_url: str | None = None
    proxy_user: str | None = None
    proxy_password: str | None = None
    ca_bundle: str | None = None  # PEM file of the CAs an https endpoint is verified against; None: botocore's default
    service_timeout_ms: int = 10000  # check(): the store's first answer within this time, else an error

    def __repr__(self) -> str:
        shown = []
        for f in fields(self):
            value = getattr(self, f.name)
            shown.append(f"{f.name}={REDACTED if f.name in self.SECRETS and value else value!r}")
        return f"StoreSpec({', '.join(shown)})"

    @classmethod
    def from_config(cls, config: Config, environ: Mapping[str, str] = os.environ) -> StoreSpec:
        """Resolve ``config`` (a parsed sink or source configuration) against the environment."""
        store_class = config["storage.class"]
        url = (config["store.url"] or "").strip()
        endpoint_url = local_root = None
        if url.startswith("file:"):
            local_root = _local_root(url)
            if store_class == "s3":
                store_class = "local"
        else:
            if store_class == "local":
                raise ConfigError(
                    f"storage.class=local needs store.url=file:///path/to/directory (got {url!r})", key="store.url"
                )
            endpoint_url = url or environ.get("AWS_ENDPOINT_URL_S3") or None
            if endpoint_url and urlparse(endpoint_url).scheme not in ("http", "https"):
                raise ConfigError(
                    f"store.url={endpoint_url!r} is not an http(s):// endpoint or a file:/// directory", key="store.url"
                )
        region = config["s3.region"] if config.is_set("s3.region") else environ.get("AWS_REGION") or config["s3.region"]
        access_key_id = config["aws.access.key.id"] or None
        secret_access_key = config["aws.secret.access.key"] or None
        if bool(access_key_id) != bool(secret_access_key):
            missing = "aws.secret.access.key" if access_key_id else "aws.access.key.id"
            raise ConfigError(
                "aws.access.key.id and aws.secret.access.key go together: set both, or neither to use the AWS default "
                f"credentials chain ({missing} is missing)",
                key=missing,
            )
        role_arn = config["sts.role.arn"] or None
        if config["s3.credentials.provider.class"] in ASSUME_ROLE_PROVIDERS and not role_arn:
            raise ConfigError(
                f"s3.credentials.provider.class={config['s3.credentials.provider.class']} needs sts.role.arn",
                key="sts.role.arn",
            )
        sse_algorithm = config["s3.ssea.name"] or None
        sse_customer_key = config["s3.sse.customer.key"] or None
        if sse_customer_key:
            _check_customer_key(sse_customer_key, sse_algorithm)
        return cls(
            store_class=store_class,
            bucket=config["s3.bucket.name"],
            region=region,
            endpoint_url=endpoint_url,
            local_root=local_root,
            path_style=config["s3.path.style.access.enabled"],
            access_key_id=access_key_id,
            secret_access_key=secret_access_key,
            role_arn=role_arn,
            role_session_name=config["sts.role.session.name"] or "kafka-s3",
            role_external_id=config["sts.role.external.id"] or None,
            part_retries=config["s3.part.retries"],
            retry_backoff_ms=config["s3.retry.backoff.ms"],
            part_size=config.get("s3.part.size", DEFAULT_PART_SIZE),
            memory_buffer_bytes=config.get("upload.buffer.memory.bytes", DEFAULT_MEMORY_BUFFER_BYTES),
            memory_budget_bytes=config.get("upload.buffer.memory.total.bytes", DEFAULT_MEMORY_BUDGET_BYTES),
            sse_algorithm=sse_algorithm,
            sse_kms_key_id=(config["s3.sse.kms.key.id"] or None) if sse_algorithm and "kms" in sse_algorithm else None,
            sse_customer_key=sse_customer_key,
            acl=config["s3.acl.canned"] or None,
            proxy_url=config["s3.proxy.url"] or None,
            proxy_user=config["s3.proxy.user"] or None,
            proxy_password=config["s3.proxy.password"] or None,
            ca_bundle=_ca_bundle(config, environ),
            service_timeout_ms=config["service.timeout.ms"],
        )

    def open(self) -> Store:
        """A new store client for this process (each Spark task opens its own)."""
        from kafka_s3.io.stores import REGISTRY

        return REGISTRY.resolve(self.store_class)(self)


def open_store(config: Config, environ: Mapping[str, str] = os.environ) -> Store:
    """The store described by ``config``, opened in this process."""
    return StoreSpec.from_config(config, environ).open()


def _local_root(url: str) -> str:
    parsed = urlparse(url)
    if parsed.netloc not in ("", "localhost") or not parsed.path:
        raise ConfigError(f"store.url={url!r}: a local store URL looks like file:///path/to/directory", key="store.url")
    return url2pathname(parsed.path)


def _ca_bundle(config: Config, environ: Mapping[str, str]) -> str | None:
    """``s3.ssl.ca.bundle``, else ``$AWS_CA_BUNDLE`` (the AWS tools' convention): a readable file, or an error now
    rather than a TLS failure in every task."""
    path, source = config["s3.ssl.ca.bundle"] or "", "s3.ssl.ca.bundle"
    if not path:
        path, source = environ.get("AWS_CA_BUNDLE", ""), "AWS_CA_BUNDLE"
    if not path:
        return None
    if not (os.path.isfile(path) and os.access(path, os.R_OK)):
        raise ConfigError(
            f"{source}={path!r} is not a readable file: it must name a PEM file of the certificate authorities that "
            "sign the object store's certificate",
            key="s3.ssl.ca.bundle",
        )
    return path


def _check_customer_key(key: str, sse_algorithm: str | None) -> None:
    """SSE-C needs exactly 32 key bytes; the value itself never appears in the message."""
    try:
        raw = base64.b64decode(key, validate=True)
    except (binascii.Error, ValueError):
        raw = b""
    if len(raw) != 32:
        raise ConfigError(
            "s3.sse.customer.key must be the base64 encoding of a 32-byte (AES-256) key", key="s3.sse.customer.key"
        )
    if sse_algorithm not in (None, "AES256"):
        raise ConfigError(
            f"s3.sse.customer.key (SSE-C) cannot be combined with s3.ssea.name={sse_algorithm}: SSE-C always uses "
            "AES256",
            key="s3.ssea.name",
        )
