"""How the S3 client is built, offline: addressing, proxy, timeouts, no botocore retries, assumed roles."""

from __future__ import annotations

import datetime

import boto3
import pytest
from botocore.stub import Stubber

from kafka_s3.io.stores.s3_client import assume_role_credentials, boto3_session, client_config
from kafka_s3.io.stores.spec import StoreSpec

ROLE = "arn:aws:iam::123456789012:role/backup"


def spec(**settings) -> StoreSpec:
    return StoreSpec(store_class="s3", bucket="b", region="eu-west-1", **settings)


def test_botocore_retries_are_off_because_retries_are_ours():
    assert client_config(spec()).retries == {"total_max_attempts": 1}


def test_path_style_follows_the_setting():
    assert client_config(spec(path_style=True)).s3 == {"addressing_style": "path"}
    assert client_config(spec(path_style=False)).s3 == {"addressing_style": "virtual"}


def test_timeouts_pool_and_region_are_set():
    config = client_config(spec())

    assert (config.connect_timeout, config.read_timeout) == (10, 30)
    assert config.max_pool_connections >= 8
    assert config.region_name == "eu-west-1"


def test_no_proxy_by_default():
    assert client_config(spec()).proxies is None


def test_proxy_credentials_are_url_encoded_into_the_proxy_url():
    config = client_config(spec(proxy_url="proxy.example:3128", proxy_user="me@corp", proxy_password="p:w/d"))

    expected = "http://me%40corp:p%3Aw%2Fd@proxy.example:3128"
    assert config.proxies == {"http": expected, "https": expected}


def test_static_keys_are_used_when_configured():
    credentials = boto3_session(spec(access_key_id="AKIA1", secret_access_key="s3cr3t")).get_credentials()

    assert (credentials.access_key, credentials.secret_key) == ("AKIA1", "s3cr3t")


def test_a_role_gives_deferred_refreshing_credentials_without_calling_sts_yet():
    session = boto3_session(spec(role_arn=ROLE, access_key_id="AKIA1", secret_access_key="s3cr3t"))

    credentials = session.get_credentials()

    assert credentials.method == "sts-assume-role"


def sts_answer(access_key: str, expires_in: datetime.timedelta) -> dict:
    return {
        "Credentials": {
            "AccessKeyId": access_key,
            "SecretAccessKey": "role-secret",
            "SessionToken": "role-token",
            "Expiration": datetime.datetime.now(datetime.UTC) + expires_in,
        }
    }


@pytest.fixture
def sts():
    client = boto3.client("sts", region_name="eu-west-1", aws_access_key_id="a", aws_secret_access_key="b")
    with Stubber(client) as stubber:
        yield client, stubber
        stubber.assert_no_pending_responses()


def test_assume_role_passes_session_name_and_external_id(sts):
    client, stubber = sts
    stubber.add_response(
        "assume_role",
        sts_answer("ASIAFIRSTROLEKEY01", datetime.timedelta(hours=1)),
        {"RoleArn": ROLE, "RoleSessionName": "nightly", "ExternalId": "ext-42"},
    )

    credentials = assume_role_credentials(
        client, spec(role_arn=ROLE, role_session_name="nightly", role_external_id="ext-42")
    ).get_frozen_credentials()

    assert credentials.access_key == "ASIAFIRSTROLEKEY01"
    assert (credentials.secret_key, credentials.token) == ("role-secret", "role-token")


def test_assumed_credentials_refresh_before_they_expire(sts):
    client, stubber = sts
    expected = {"RoleArn": ROLE, "RoleSessionName": "kafka-s3"}
    stubber.add_response("assume_role", sts_answer("ASIAOLDROLEKEY0001", datetime.timedelta(minutes=5)), expected)
    stubber.add_response("assume_role", sts_answer("ASIANEWROLEKEY0001", datetime.timedelta(hours=1)), expected)
    credentials = assume_role_credentials(client, spec(role_arn=ROLE))

    first = credentials.get_frozen_credentials().access_key
    second = credentials.get_frozen_credentials().access_key  # five minutes left: inside botocore's refresh window

    assert (first, second) == ("ASIAOLDROLEKEY0001", "ASIANEWROLEKEY0001")
