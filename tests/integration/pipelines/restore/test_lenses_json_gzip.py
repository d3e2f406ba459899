"""Issue 15 item 7 (B): Lenses' JSON objects written with ``connect.s3.compression.codec=GZIP`` restore through a Lenses
source configuration, envelope record-exact, with the real S3, Kafka and Spark.

Built from Lenses' source code (LS = lensesio/stream-reactor, ``kafka-connect-cloud-common/``), never by our writer:

- LS ``formats/writer/JsonFormatWriter.write``: with GZIP one ``GzipCompressorOutputStream`` (level 6 by default)
  wraps the object's whole output, each record's JSON followed by the line separator;
- LS ``sink/naming/FileExtensionNamer.fileExtension``: for JSON the codec's extension replaces the format's, so the
  object is ``<offset %012d>_<minTs>_<maxTs>.gz`` (``CompressionCodecName.GZIP`` extension ``gz``);
- lines and names otherwise as in ``test_lenses_json`` (its helpers build them).
"""

from __future__ import annotations

import gzip

import pytest

from tests.integration.pipelines.restore.test_lenses_json import (
    LENSES_SOURCE,
    RECORDS,
    _bytes,
    _kcql,
    lenses_objects,
    plain_line,
)
from tests.support.restore import read_topic

pytestmark = pytest.mark.integration


def gzip_objects(topic: str, envelope: bool) -> dict[str, bytes]:
    objects = {}
    for key, body in lenses_objects(topic, envelope).items():
        if key.endswith(".json"):
            objects[key[: -len(".json")] + ".gz"] = gzip.compress(body, compresslevel=6)
        else:
            objects[key] = body
    return objects


@pytest.mark.parametrize("envelope", [True, False], ids=["envelope", "plain"])
def test_lenses_json_gzip_bucket_restores(envelope, restorer, fresh_bucket, fresh_topic, s3_client, kafka_bootstrap):
    source, target = f"orders-{fresh_topic(1)}", fresh_topic(2)
    for key, body in gzip_objects(source, envelope).items():
        s3_client.put_object(Bucket=fresh_bucket, Key=key, Body=body)
    properties = {
        "connector.class": LENSES_SOURCE,
        "connect.s3.kcql": _kcql(target, fresh_bucket, envelope),
        "connect.s3.compression.codec": "GZIP",
    }

    restorer(fresh_bucket, source, properties).run()

    restored = read_topic(kafka_bootstrap, target)
    for partition in (0, 1):
        expected = [r for r in RECORDS if r[0] == partition]
        if envelope:
            got = [(r["key"], r["value"], len(r["headers"])) for r in restored[partition]]
            assert got == [(_bytes(r[2]), _bytes(r[3]), len(r[4])) for r in expected]
        else:
            plain = [r for r in expected if r[3] is not None and not isinstance(r[3], bytes)]
            assert [r["value"] for r in restored[partition]] == [
                plain_line(r).rstrip(b"\n") for r in plain
            ]  # the line as is (LS TextConverter)
