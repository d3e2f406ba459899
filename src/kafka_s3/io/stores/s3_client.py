"""The S3 client a store uses: credentials (static, profile, assumed role), proxies, timeouts, and botocore
settings, with retries left to :mod:`kafka_s3.io.stores.retry`."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote, urlparse

import boto3
import botocore.session
from botocore.config import Config as BotoConfig
from botocore.credentials import (
    CredentialProvider,
    CredentialResolver,
    DeferredRefreshableCredentials,
)

from kafka_s3.io.stores.spec import StoreSpec

CONNECT_TIMEOUT_S = 10

# Seconds without a byte from the store before an attempt fails: a store that stopped answering is then logged (the
# retry's warning) after this long, and the stall budget (kafka_s3.io.stores.s3) ends the operation.
READ_TIMEOUT_S = 30


MAX_POOL_CONNECTIONS = 16


# --------------------------------------------------------------------------------------------------- credentials
def assume_role_credentials(sts_client: Any, spec: StoreSpec) -> DeferredRefreshableCredentials:
    """Credentials of ``spec.role_arn`` that botocore refreshes before they expire (long backups outlive them)."""

    def fetch() -> dict[str, str]:
        params = {"RoleArn": spec.role_arn, "RoleSessionName": spec.role_session_name}
        if spec.role_external_id:
            params["ExternalId"] = spec.role_external_id
        credentials = sts_client.assume_role(**params)["Credentials"]
        return {
            "access_key": credentials["AccessKeyId"],
            "secret_key": credentials["SecretAccessKey"],
            "token": credentials["SessionToken"],
            "expiry_time": credentials["Expiration"].isoformat(),
        }

    return DeferredRefreshableCredentials(refresh_using=fetch, method="sts-assume-role")


class _AssumeRoleProvider(CredentialProvider):  # type: ignore[misc]  # botocore ships no type stubs
    """Hands the role's refreshing credentials to a botocore session through its public component API."""

    METHOD = "sts-assume-role"

    def __init__(self, credentials: DeferredRefreshableCredentials):
        super().__init__()
        self._credentials = credentials

    def load(self) -> DeferredRefreshableCredentials:
        return self._credentials


def _no_retries(**options: Any) -> BotoConfig:
    """botocore retries off: :class:`RetryPolicy` is the one retry mechanism."""
    return BotoConfig(retries={"total_max_attempts": 1}, **options)


def boto3_session(spec: StoreSpec) -> boto3.Session:
    """Static keys when configured, else boto3's default chain; assumed role on top of either when configured."""
    static = boto3.Session(
        aws_access_key_id=spec.access_key_id, aws_secret_access_key=spec.secret_access_key, region_name=spec.region
    )
    if not spec.role_arn:
        return static
    sts = static.client("sts", config=_no_retries(connect_timeout=CONNECT_TIMEOUT_S, read_timeout=READ_TIMEOUT_S))
    core = botocore.session.Session()
    core.register_component(
        "credential_provider", CredentialResolver([_AssumeRoleProvider(assume_role_credentials(sts, spec))])
    )
    return boto3.Session(botocore_session=core, region_name=spec.region)


def _proxies(spec: StoreSpec) -> dict[str, str] | None:
    if not spec.proxy_url:
        return None
    url = spec.proxy_url if "://" in spec.proxy_url else f"http://{spec.proxy_url}"
    if spec.proxy_user:
        parsed = urlparse(url)
        auth = quote(spec.proxy_user, safe="") + (
            ":" + quote(spec.proxy_password, safe="") if spec.proxy_password else ""
        )
        url = parsed._replace(netloc=f"{auth}@{parsed.netloc}").geturl()
    return {"http": url, "https": url}


def client_config(spec: StoreSpec) -> BotoConfig:
    """Addressing, proxy, timeouts and a pool big enough for the part-upload threads plus the caller's requests."""
    return _no_retries(
        region_name=spec.region,
        signature_version="s3v4",
        s3={"addressing_style": "path" if spec.path_style else "virtual"},
        proxies=_proxies(spec),
        connect_timeout=CONNECT_TIMEOUT_S,
        read_timeout=READ_TIMEOUT_S,
        max_pool_connections=MAX_POOL_CONNECTIONS,
        tcp_keepalive=True,
        # Checksums only where S3 requires them: computing a CRC of every part cost a quarter of the upload time;
        # TLS and SigV4 already protect the bytes in transit.
        request_checksum_calculation="when_required",
        response_checksum_validation="when_required",
    )
