"""Lenses' stream-reactor S3 sink and source (LS = lensesio/stream-reactor, ``kafka-connect-cloud-common/``).

====================  ===============================================================================================
module                job
====================  ===============================================================================================
``kcql``              KCQL's tokens and grammar: ``connect.s3.kcql`` parsed into statements
``config``            a statement translated into properties (sink and source), the ``connect.s3.kcql`` property,
                      one configuration per statement, the checks of a Lenses sink configuration
``policy``            Lenses' rules: its connector classes, defaults, which configurations its layout holds, padding,
                      compression codecs, ``PARTITIONBY _date.<pattern>``, envelope properties
``layout``            its names (``<topic>/<p>/<last offset>_<minTs>_<maxTs>.<ext>``, PARTITIONBY directories),
                      decided when an object closes; its lock objects; how a listing tells them apart
``partitioner``       PARTITIONBY: directories from value fields, the key, headers, topic, partition and dates
``json``              its JSON objects (envelope lines or values), read as its source reads them
``json_writer``       its JSON objects written byte for byte (Jackson's output of Java and Scala hash maps)
``java_json``         JSON text as the JVM writes it: hash-map orders, Java's number texts
``text``              its TEXT and BYTES objects
``csv``               its CSV and CSV_WITHHEADERS objects
``struct``            its Avro and Parquet objects (the format: reading, rolling on schema changes)
``struct_schemas``    the Connect schemas its Avro and Parquet records have (optional schemas, typed headers)
``struct_rows``       records as its Avro and Parquet rows, envelope or plain
``struct_writer``     those rows as Avro containers and Parquet files, byte for byte
====================  ===============================================================================================
"""

from __future__ import annotations

from kafka_s3.core.peers.base import Peer, Registration
from kafka_s3.core.peers.lenses.config import CONFIG, check_sink, split_statements
from kafka_s3.core.peers.lenses.kcql import KCQL_KEY
from kafka_s3.core.peers.lenses.layout import claims
from kafka_s3.core.peers.lenses.policy import SINK_CLASS, SOURCE_CLASS, lenses_layout_blockers

_HERE = "kafka_s3.core.peers.lenses"

PEER = Peer(
    name="lenses",
    short="Lenses",
    title="Lenses' stream-reactor",
    claims=claims,
    layout=f"{_HERE}.layout:LensesLayout",
    sink_classes=(SINK_CLASS,),
    source_classes=(SOURCE_CLASS,),
    config=CONFIG,
    layout_blockers=lenses_layout_blockers,
    check_sink=check_sink,
    split=split_statements,
    statement_key=KCQL_KEY,
    formats=(
        Registration("lenses_json", f"{_HERE}.json:LensesJsonFormat"),
        Registration("lenses_avro", f"{_HERE}.struct:LensesAvroFormat"),
        Registration("lenses_parquet", f"{_HERE}.struct:LensesParquetFormat"),
        Registration("lenses_text", f"{_HERE}.text:LensesTextFormat"),
        Registration("lenses_bytes", f"{_HERE}.text:LensesBytesFormat"),
        Registration("csv", f"{_HERE}.csv:CsvFormat", aliases=("CSV",)),
        Registration("csv_withheaders", f"{_HERE}.csv:CsvWithHeadersFormat", aliases=("CSV_WITHHEADERS",)),
    ),
    partitioners=(Registration("kcql", f"{_HERE}.partitioner:KcqlPartitioner", aliases=("KcqlPartitioner",)),),
)
