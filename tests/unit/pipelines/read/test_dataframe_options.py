"""Issue 28 item 1: the options of ``spark.read.format("kafka-s3")`` — Spark's Kafka-source names with Spark's
meaning, kafka-s3's own and every configuration property; anything else, or two options giving one thing, is an
error naming it."""

from __future__ import annotations

import pytest

from kafka_s3.core.config.source import SOURCE
from kafka_s3.core.errors import ConfigError
from kafka_s3.pipelines.read.dataframe_options import parse, resolve
from kafka_s3.pipelines.read.options import Bounds

pytestmark = pytest.mark.issue(28, item=1)

KEYS = [*SOURCE.props, *SOURCE.alias_map(), *SOURCE.quiet, "name"]
HELD = {("orders", 0), ("orders", 1), ("payments", 0)}


def options(**given: str):
    return parse(given, KEYS, SOURCE.passthrough_prefixes)


def test_configuration_properties_and_spark_names_in_any_case_are_accepted():
    parsed = options(**{"s3.bucket.name": "b", "SUBSCRIBE": "orders", "includeheaders": "FALSE", "flush.size": "3"})
    assert parsed.properties == {"s3.bucket.name": "b", "flush.size": "3"}
    assert parsed.topics == ("orders",) and parsed.include_headers is False


def test_an_unknown_option_is_an_error_with_a_did_you_mean():
    with pytest.raises(ConfigError, match="unknown option 'startingoffset'.*did you mean 'startingOffsets'"):
        options(startingOffset="earliest")
    with pytest.raises(ConfigError, match="unknown option 'frobnicate'"):
        options(frobnicate="1")


def test_spark_kafka_options_that_cannot_apply_to_a_backup_say_why():
    with pytest.raises(ConfigError, match="minPartitions does not apply to a backup: .*one Spark partition per"):
        options(minPartitions="8")
    with pytest.raises(ConfigError, match="kafka.bootstrap.servers does not apply to a backup"):
        options(**{"kafka.bootstrap.servers": "h:9092"})


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"subscribe": "a", "subscribePattern": "a.*"}, "subscribe and subscribePattern both give the topics"),
        ({"startingOffsets": "earliest", "startingTimestamp": "5"}, "startingOffsets and startingTimestamp both"),
        ({"endingOffsets": "latest", "until.offset": "0:5"}, "endingOffsets and until.offset both"),
        ({"failOnDataLoss": "false", "allow.gaps": "false"}, "contradict each other"),
        ({"startingOffsets": "latest"}, "starting offsets cannot be latest for a batch read"),
        ({"endingOffsets": "earliest"}, "ending offsets cannot be earliest"),
        ({"startingOffsets": '{"orders":{"0":-1}}'}, r"orders\[0\]: -1 is not an offset here"),
        ({"endingOffsets": '{"orders":{"0":-2}}'}, r"orders\[0\]: -2 is not an offset here"),
        ({"assign": '{"orders":"0"}'}, "assign: expected a JSON object of topics and partition lists"),
        ({"subscribePattern": "("}, "subscribePattern: not a regular expression"),
        ({"includeHeaders": "yes"}, "includeHeaders: expected true or false"),
    ],
)
def test_contradicting_or_malformed_options_are_errors(given, message):
    with pytest.raises(ConfigError, match=message):
        options(**given)


def test_failondataloss_false_is_allow_gaps_and_a_configuration_topics_give_way_to_subscribe():
    assert options(failOnDataLoss="false").allow_gaps and not options(failOnDataLoss="true").allow_gaps
    assert options(failOnDataLoss="false", **{"allow.gaps": "true"}).allow_gaps
    assert options(topics="orders", subscribe="payments").topics == ("payments",)


def test_offsets_and_times_become_each_partitions_bounds_with_sparks_meaning():
    parsed = options(
        assign='{"orders":[0,1]}',
        startingOffsets='{"orders":{"0":5,"1":-2}}',
        endingOffsets='{"orders":{"0":-1,"1":9}}',
    )
    assert resolve(parsed, HELD, None) == {("orders", 0): Bounds(5, None), ("orders", 1): Bounds(None, 9)}
    timed = options(subscribe="orders", startingTimestamp="2024-05-01T00:00:00Z", endingTimestamp="1714521600500")
    assert set(resolve(timed, HELD, None).values()) == {Bounds(None, None, 1_714_521_600_000, 1_714_521_600_500)}
    by_time = options(subscribe="payments", endingOffsetsByTimestamp='{"payments":{"0":77}}')
    assert resolve(by_time, HELD, None) == {("payments", 0): Bounds(None, None, None, 77)}
    restore_style = options(**{"from.offset": "1:4", "until.offset": "orders:0:3"})
    assert resolve(restore_style, HELD, ["orders"]) == {("orders", 0): Bounds(None, 3), ("orders", 1): Bounds(4, None)}


def test_a_selection_the_backup_does_not_hold_is_an_error_naming_what_it_holds():
    with pytest.raises(ConfigError, match=r"subscribe: topic nowhere not in the backup \(it holds orders, payments\)"):
        resolve(options(subscribe="orders,nowhere"), HELD, None)
    with pytest.raises(ConfigError, match=r"topics: topic nowhere not in the backup \(it holds a, b\)"):
        resolve(options(), HELD, ["nowhere"], ["a", "b"])
    with pytest.raises(
        ConfigError, match=r"assign: orders partition 4 not in the backup \(orders holds partitions 0, 1"
    ):
        resolve(options(assign='{"orders":[4]}'), HELD, None)
    with pytest.raises(ConfigError, match="subscribePattern 'x.*' matches no topic of the backup"):
        resolve(options(subscribePattern="x.*"), HELD, None)
    assert set(resolve(options(subscribePattern="ord.rs"), HELD, None)) == {("orders", 0), ("orders", 1)}
    with pytest.raises(ConfigError, match=r"startingOffsets must name every partition read.*leaves out orders\[1\]"):
        resolve(options(subscribe="orders", startingOffsets='{"orders":{"0":1}}'), HELD, None)
