"""Lenses' stream-reactor S3 sink and source (LS = lensesio/stream-reactor, ``kafka-connect-cloud-common/``)."""

from __future__ import annotations

from kafka_s3.core.config.common import KCQL
from kafka_s3.core.config.kcql import KCQL_KEY, check_sink, lenses_layout_blockers, split_statements
from kafka_s3.core.peers.base import Peer, Registration
from kafka_s3.core.peers.lenses.layout import SINK_CLASS, SOURCE_CLASS, claims

PEER = Peer(
    name="lenses",
    short="Lenses",
    title="Lenses' stream-reactor",
    claims=claims,
    layout="kafka_s3.core.peers.lenses.layout:LensesLayout",
    sink_classes=(SINK_CLASS,),
    source_classes=(SOURCE_CLASS,),
    config=KCQL,
    layout_blockers=lenses_layout_blockers,
    check_sink=check_sink,
    split=split_statements,
    statement_key=KCQL_KEY,
    formats=(
        Registration("lenses_json", "kafka_s3.core.formats.lenses_json:LensesJsonFormat"),
        Registration("lenses_avro", "kafka_s3.core.formats.lenses_struct:LensesAvroFormat"),
        Registration("lenses_parquet", "kafka_s3.core.formats.lenses_struct:LensesParquetFormat"),
        Registration("lenses_text", "kafka_s3.core.formats.lenses_text:LensesTextFormat"),
        Registration("lenses_bytes", "kafka_s3.core.formats.lenses_text:LensesBytesFormat"),
        Registration("csv", "kafka_s3.core.formats.csv:CsvFormat", aliases=("CSV",)),
        Registration("csv_withheaders", "kafka_s3.core.formats.csv:CsvWithHeadersFormat", aliases=("CSV_WITHHEADERS",)),
    ),
    partitioners=(
        Registration("kcql", "kafka_s3.core.partitioners.kcql:KcqlPartitioner", aliases=("KcqlPartitioner",)),
    ),
)
