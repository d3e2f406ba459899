"""StoreSpec: resolution from configuration and environment, hidden secrets, picklability, opening stores."""

from __future__ import annotations

import base64
import pickle

import pytest

from kafka_s3.core.config.source import SOURCE
from kafka_s3.core.errors import ConfigError
from kafka_s3.io.stores.local import LocalStore
from kafka_s3.io.stores.s3 import S3Store
from kafka_s3.io.stores.spec import DEFAULT_MEMORY_BUFFER_BYTES, DEFAULT_PART_SIZE, StoreSpec, open_store

CUSTOMER_KEY = base64.b64encode(bytes(range(32))).decode()
SECRETS = {
    "aws.access.key.id": "AKIAEXAMPLE",
    "aws.secret.access.key": "very-secret-key",
    "s3.sse.customer.key": CUSTOMER_KEY,
    "s3.proxy.url": "http://proxy.example:3128",
    "s3.proxy.user": "proxy-user",
    "s3.proxy.password": "proxy-pass-word",
}


def spec_of(sink_config, settings=None, environ=None) -> StoreSpec:
    return StoreSpec.from_config(sink_config(settings), environ=environ or {})


def test_store_url_is_the_endpoint(sink_config):
    spec = spec_of(sink_config, {"store.url": "http://127.0.0.1:8333"}, {"AWS_ENDPOINT_URL_S3": "http://other:1"})

    assert (spec.store_class, spec.endpoint_url, spec.local_root) == ("s3", "http://127.0.0.1:8333", None)


def test_endpoint_falls_back_to_the_environment_then_aws(sink_config):
    from_environment = spec_of(sink_config, environ={"AWS_ENDPOINT_URL_S3": "https://s3.example"})

    assert from_environment.endpoint_url == "https://s3.example"
    assert spec_of(sink_config).endpoint_url is None


def test_endpoint_alias_is_understood(sink_config):
    assert spec_of(sink_config, {"s3.endpoint": "http://minio:9000"}).endpoint_url == "http://minio:9000"


def test_file_url_selects_the_local_store(sink_config, tmp_path):
    spec = spec_of(sink_config, {"store.url": tmp_path.as_uri()})

    assert (spec.store_class, spec.local_root, spec.endpoint_url) == ("local", str(tmp_path), None)
    assert isinstance(spec.open(), LocalStore)


@pytest.mark.parametrize(
    "settings, key",
    [
        ({"storage.class": "local"}, "store.url"),
        ({"storage.class": "local", "store.url": "http://127.0.0.1:8333"}, "store.url"),
        ({"store.url": "ftp://example.com"}, "store.url"),
        ({"store.url": "file://remote-host/data"}, "store.url"),
    ],
)
def test_inconsistent_locations_are_config_errors(sink_config, settings, key):
    with pytest.raises(ConfigError) as caught:
        spec_of(sink_config, settings)
    assert caught.value.key == key


def test_region_set_by_the_user_wins_over_the_environment(sink_config):
    assert spec_of(sink_config, {"s3.region": "eu-west-3"}, {"AWS_REGION": "ap-south-1"}).region == "eu-west-3"
    assert spec_of(sink_config, {"aws.region": "eu-west-3"}, {"AWS_REGION": "ap-south-1"}).region == "eu-west-3"


def test_region_falls_back_to_the_environment_then_the_default(sink_config):
    assert spec_of(sink_config, environ={"AWS_REGION": "ap-south-1"}).region == "ap-south-1"
    assert spec_of(sink_config).region == "us-west-2"


def test_static_credentials_when_both_keys_are_set(sink_config):
    spec = spec_of(sink_config, {"aws.access.key.id": "AKIA1", "aws.secret.access.key": "s3cr3t"})

    assert (spec.access_key_id, spec.secret_access_key) == ("AKIA1", "s3cr3t")


def test_default_chain_when_no_keys_are_set(sink_config):
    spec = spec_of(sink_config, environ={"AWS_ACCESS_KEY_ID": "from-env"})

    assert (spec.access_key_id, spec.secret_access_key, spec.role_arn) == (None, None, None)


@pytest.mark.parametrize(
    "settings, missing",
    [
        ({"aws.access.key.id": "AKIA1"}, "aws.secret.access.key"),
        ({"aws.secret.access.key": "s3cr3t"}, "aws.access.key.id"),
    ],
)
def test_half_a_key_pair_is_a_config_error(sink_config, settings, missing):
    with pytest.raises(ConfigError) as caught:
        spec_of(sink_config, settings)

    assert caught.value.key == missing
    assert "s3cr3t" not in str(caught.value)


def test_role_arn_selects_assume_role_with_session_name_and_external_id(sink_config):
    spec = spec_of(
        sink_config,
        {
            "s3.credentials.provider.class": "io.confluent.connect.s3.auth.AwsAssumeRoleCredentialsProvider",
            "sts.role.arn": "arn:aws:iam::123456789012:role/backup",
            "sts.role.session.name": "nightly",
            "sts.role.external.id": "ext-42",
        },
    )

    assert (spec.role_arn, spec.role_session_name, spec.role_external_id) == (
        "arn:aws:iam::123456789012:role/backup",
        "nightly",
        "ext-42",
    )


def test_assume_role_provider_without_a_role_is_a_config_error(sink_config):
    with pytest.raises(ConfigError) as caught:
        spec_of(sink_config, {"s3.credentials.provider.class": "AwsAssumeRoleCredentialsProvider"})
    assert caught.value.key == "sts.role.arn"


def test_upload_and_retry_settings_come_from_the_configuration(sink_config):
    spec = spec_of(
        sink_config,
        {
            "s3.part.size": str(5 * 1024 * 1024),
            "upload.buffer.memory.bytes": "1024",
            "s3.part.retries": "7",
            "s3.retry.backoff.ms": "50",
            "s3.path.style.access.enabled": "false",
            "s3.acl.canned": "bucket-owner-full-control",
        },
    )

    assert (spec.part_size, spec.memory_buffer_bytes, spec.part_retries, spec.retry_backoff_ms) == (
        5 * 1024 * 1024,
        1024,
        7,
        50,
    )
    assert spec.path_style is False
    assert spec.acl == "bucket-owner-full-control"


def test_a_restore_configuration_uses_default_upload_sizes():
    spec = StoreSpec.from_config(SOURCE.parse({"s3.bucket.name": "b", "format.class": "bytearray"}), environ={})

    assert (spec.part_size, spec.memory_buffer_bytes) == (DEFAULT_PART_SIZE, DEFAULT_MEMORY_BUFFER_BYTES)


def test_kms_key_id_only_applies_with_kms(sink_config):
    kms = spec_of(sink_config, {"s3.ssea.name": "aws:kms", "s3.sse.kms.key.id": "key-1"})
    aes = spec_of(sink_config, {"s3.ssea.name": "AES256", "s3.sse.kms.key.id": "key-1"})

    assert (kms.sse_algorithm, kms.sse_kms_key_id) == ("aws:kms", "key-1")
    assert (aes.sse_algorithm, aes.sse_kms_key_id) == ("AES256", None)


@pytest.mark.parametrize("bad_key", ["not base64!", base64.b64encode(b"too short").decode()])
def test_customer_key_must_be_32_bytes_and_is_never_echoed(sink_config, bad_key):
    with pytest.raises(ConfigError) as caught:
        spec_of(sink_config, {"s3.sse.customer.key": bad_key})

    assert caught.value.key == "s3.sse.customer.key"
    assert bad_key not in str(caught.value)


def test_customer_key_cannot_be_combined_with_kms(sink_config):
    with pytest.raises(ConfigError) as caught:
        spec_of(sink_config, {"s3.sse.customer.key": CUSTOMER_KEY, "s3.ssea.name": "aws:kms"})
    assert caught.value.key == "s3.ssea.name"


def test_repr_and_str_hide_every_secret(sink_config):
    spec = spec_of(sink_config, SECRETS)

    for text in (repr(spec), str(spec), f"{spec}"):
        for secret in ("very-secret-key", CUSTOMER_KEY, "proxy-pass-word"):
            assert secret not in text
        assert "secret_access_key='[hidden]'" in text
        assert "access_key_id='AKIAEXAMPLE'" in text
        assert "proxy_user='proxy-user'" in text


def test_repr_shows_unset_secrets_as_none(sink_config):
    assert "secret_access_key=None" in repr(spec_of(sink_config))


def test_spec_survives_pickling_with_its_secrets(sink_config):
    spec = spec_of(sink_config, {**SECRETS, "store.url": "http://127.0.0.1:8333"})

    copy = pickle.loads(pickle.dumps(spec))

    assert copy == spec
    assert copy.secret_access_key == "very-secret-key"


def test_spec_is_immutable(sink_config):
    with pytest.raises(AttributeError):
        spec_of(sink_config).bucket = "other"  # type: ignore[misc]


def test_open_store_builds_the_s3_store_without_network(sink_config):
    settings = {"store.url": "http://127.0.0.1:9", "aws.access.key.id": "a", "aws.secret.access.key": "b"}

    store = open_store(sink_config(settings), environ={})
    try:
        assert isinstance(store, S3Store)
        assert store.url == "s3://b"
    finally:
        store.close()


class RecordingStore:
    """A user store class given by dotted path: it receives the spec."""

    def __init__(self, spec: StoreSpec):
        self.spec = spec


def test_a_user_store_class_receives_the_spec(sink_config):
    spec = spec_of(sink_config, {"storage.class": f"{__name__}:RecordingStore"})

    store = spec.open()

    assert isinstance(store, RecordingStore)
    assert store.spec is spec


@pytest.mark.issue(13, item=4)
def test_ca_bundle_comes_from_the_setting_then_aws_ca_bundle(sink_config, tmp_path):
    setting, variable = tmp_path / "setting.pem", tmp_path / "variable.pem"
    setting.write_text("ca")
    variable.write_text("ca")

    assert spec_of(sink_config, {"s3.ssl.ca.bundle": str(setting)}, {"AWS_CA_BUNDLE": str(variable)}).ca_bundle == str(
        setting
    )
    assert spec_of(sink_config, environ={"AWS_CA_BUNDLE": str(variable)}).ca_bundle == str(variable)
    assert spec_of(sink_config).ca_bundle is None


@pytest.mark.issue(13, item=4)
@pytest.mark.parametrize("source", ["s3.ssl.ca.bundle", "AWS_CA_BUNDLE"])
def test_unreadable_ca_bundle_is_a_config_error_naming_where_it_came_from(sink_config, tmp_path, source):
    missing = str(tmp_path / "missing.pem")
    settings, environ = ({source: missing}, None) if source == "s3.ssl.ca.bundle" else (None, {source: missing})

    with pytest.raises(ConfigError, match=rf"^{source}='.*missing.pem' is not a readable file") as caught:
        spec_of(sink_config, settings, environ)
    assert caught.value.key == "s3.ssl.ca.bundle"


@pytest.mark.issue(15, item=4)
@pytest.mark.parametrize(
    "provider",
    [
        "DefaultAWSCredentialsProviderChain",  # AWS SDK v1 (Confluent's connector before its SDK v2 move)
        "com.amazonaws.auth.DefaultAWSCredentialsProviderChain",
        "DefaultCredentialsProvider",  # AWS SDK v2's default chain
        "software.amazon.awssdk.auth.credentials.DefaultCredentialsProvider",
    ],
)
def test_credentials_provider_accepts_sdk_v1_and_v2_default_chains(sink_config, provider):
    spec = spec_of(sink_config, {"s3.credentials.provider.class": provider})

    assert (spec.access_key_id, spec.role_arn) == (None, None)  # boto3's default chain


@pytest.mark.issue(15, item=4)
def test_an_unknown_credentials_provider_names_the_key(sink_config):
    with pytest.raises(ConfigError) as caught:
        spec_of(sink_config, {"s3.credentials.provider.class": "software.amazon.awssdk.auth.credentials.Nope"})
    assert caught.value.key == "s3.credentials.provider.class"
