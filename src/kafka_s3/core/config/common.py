"""Properties shared by the backup (sink) and restore (source) connectors.

Names, types and defaults follow Confluent's S3 connectors; properties marked ``origin="kafka-s3"`` are ours.
Over 500 lines because it is a table: one declaration per property, each with its documentation.
"""

from __future__ import annotations

import re

from kafka_s3.core.config.model import REQUIRED, Check, ConfigDef, Importance, OneOf, Plugin, Prop, Range, Type
from kafka_s3.core.config.registries import CONVERTERS, EXTRACTORS, FORMATS, PARTITIONERS, STORES
from kafka_s3.core.timezones import timezone_error

H, M, L = Importance.HIGH, Importance.MEDIUM, Importance.LOW
MiB = 1024 * 1024


CANNED_ACLS = (
    "private",
    "public-read",
    "public-read-write",
    "authenticated-read",
    "aws-exec-read",
    "bucket-owner-read",
    "bucket-owner-full-control",
    "log-delivery-write",
)


def _locale_error(value: str) -> str | None:
    if value == "" or re.fullmatch(r"[a-zA-Z]{2,3}([-_][a-zA-Z0-9]{2,8})*", value):
        return None
    return "not a locale tag (use e.g. en-US, en-GB, fr-FR)"


# ------------------------------------------------------------------------------------------------- Kafka connection
KAFKA = ConfigDef("connection").define(
    Prop(
        "bootstrap.servers",
        Type.LIST,
        "",
        "Kafka bootstrap servers (host:port,...). Defaults to $KAFKA_BOOTSTRAP_SERVERS. In Kafka Connect this comes "
        "from the worker configuration; kafka-s3 reads it from the connector file or the environment.",
        H,
        "Kafka",
    ),
    Prop(
        "security.protocol",
        Type.STRING,
        "",
        "Protocol used to talk to brokers (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL); passed to librdkafka.",
        M,
        "Kafka",
        OneOf(("", "PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")),
    ),
    Prop(
        "service.timeout.ms",
        Type.LONG,
        "10000",
        "How long a command waits for the first answer of the Kafka cluster and of the object store before it stops "
        "with an error naming the bootstrap servers or the endpoint and the first underlying error (connection "
        "refused, unknown host, refused credentials...): with the default, an unreachable service is reported within "
        "15 s of the start. Later requests keep their own timeouts and retries. Each request to a Schema Registry "
        "(saving and restoring subjects) waits this long for an answer (the registry client tries 4 times).",
        M,
        "Kafka",
        Range(1),
        origin="kafka-s3",
    ),
)

# ---------------------------------------------------------------------------------------------------- S3 and storage
STORAGE = ConfigDef("storage").define(
    Prop("s3.bucket.name", Type.STRING, REQUIRED, "The S3 bucket.", H, "S3"),
    Prop(
        "s3.region",
        Type.STRING,
        "us-west-2",
        "The AWS region of the bucket. $AWS_REGION is used when the key is not set.",
        M,
        "S3",
        aliases=("aws.region",),
    ),
    Prop(
        "store.url",
        Type.STRING,
        "",
        "Object store endpoint URL for S3-compatible stores (e.g. http://127.0.0.1:8333); defaults to "
        "$AWS_ENDPOINT_URL_S3, then AWS. A file:///path URL selects the local directory store.",
        H,
        "Storage",
        aliases=("aws.custom.endpoint",),
    ),
    Prop(
        "storage.class",
        Type.CLASS,
        "s3",
        "The storage backend: s3 (io.confluent.connect.s3.storage.S3Storage) or local.",
        H,
        "Storage",
        Plugin(STORES),
    ),
    Prop(
        "topics.dir",
        Type.STRING,
        "topics",
        "Top-level directory (key prefix) under which objects are stored.",
        H,
        "Storage",
    ),
    Prop("directory.delim", Type.STRING, "/", "Directory delimiter pattern.", M, "Storage"),
    Prop("file.delim", Type.STRING, "+", "File delimiter pattern.", M, "Storage"),
    Prop(
        "s3.path.style.access.enabled",
        Type.BOOLEAN,
        "true",
        "Use path-style access (http://endpoint/bucket/key) instead of virtual-hosted buckets.",
        L,
        "S3",
    ),
    Prop(
        "aws.access.key.id",
        Type.STRING,
        "",
        "AWS access key id. Defaults to the AWS default credentials chain ($AWS_ACCESS_KEY_ID, ~/.aws/credentials, "
        "instance roles...).",
        H,
        "S3",
        aliases=("aws.access.key",),
    ),
    Prop(
        "aws.secret.access.key",
        Type.PASSWORD,
        None,
        "AWS secret access key, used with aws.access.key.id.",
        H,
        "S3",
        aliases=("aws.secret.key",),
    ),
    Prop(
        "s3.credentials.provider.class",
        Type.CLASS,
        "DefaultAWSCredentialsProviderChain",
        "Credentials provider: the AWS SDK's default chain, by its SDK v1 name (DefaultAWSCredentialsProviderChain) or "
        "its SDK v2 name (DefaultCredentialsProvider), both boto3's default chain; or "
        "AwsAssumeRoleCredentialsProvider (assume sts.role.arn).",
        L,
        "S3",
        OneOf(
            (
                "DefaultAWSCredentialsProviderChain",
                "com.amazonaws.auth.DefaultAWSCredentialsProviderChain",
                "DefaultCredentialsProvider",
                "software.amazon.awssdk.auth.credentials.DefaultCredentialsProvider",
                "AwsAssumeRoleCredentialsProvider",
                "io.confluent.connect.s3.auth.AwsAssumeRoleCredentialsProvider",
            )
        ),
    ),
    Prop("sts.role.arn", Type.STRING, "", "Role to assume (AwsAssumeRoleCredentialsProvider).", L, "S3"),
    Prop("sts.role.session.name", Type.STRING, "kafka-s3", "Session name when assuming sts.role.arn.", L, "S3"),
    Prop("sts.role.external.id", Type.STRING, "", "External id when assuming sts.role.arn.", L, "S3"),
    Prop(
        "s3.part.retries",
        Type.INT,
        "3",
        "Maximum number of retries of a failed S3 request (0: no retry).",
        M,
        "S3",
        Range(0),
    ),
    Prop(
        "s3.retry.backoff.ms",
        Type.LONG,
        "200",
        "Base of the exponential, fully jittered backoff between retries: retry n waits a random time up to "
        "s3.retry.backoff.ms * 2^(n-1), capped at 24 hours.",
        L,
        "S3",
        Range(0),
    ),
    Prop(
        "s3.ssea.name",
        Type.STRING,
        "",
        "Server-side encryption algorithm: AES256 or aws:kms (empty: none).",
        L,
        "S3",
        OneOf(("", "AES256", "aws:kms", "aws:kms:dsse")),
    ),
    Prop("s3.sse.kms.key.id", Type.STRING, "", "KMS key id used with s3.ssea.name=aws:kms.", L, "S3"),
    Prop(
        "s3.sse.customer.key",
        Type.PASSWORD,
        None,
        "Customer-provided encryption key (SSE-C), base64 of 32 bytes.",
        L,
        "S3",
        aliases=("s3.sse.key",),
    ),
    Prop(
        "s3.acl.canned", Type.STRING, "", "Canned ACL applied to written objects.", L, "S3", OneOf(("",) + CANNED_ACLS)
    ),
    Prop(
        "s3.http.send.expect.continue",
        Type.BOOLEAN,
        "true",
        "Send 'Expect: 100-continue' on PUTs (accepted for compatibility; boto3 decides per request).",
        L,
        "S3",
    ),
    Prop(
        "s3.ssl.ca.bundle",
        Type.STRING,
        "",
        "PEM file of the certificate authorities an https:// store.url is verified against (a private CA); "
        "defaults to $AWS_CA_BUNDLE, then the system's CAs. Read on every machine that runs tasks.",
        L,
        "S3",
        origin="kafka-s3",
    ),
    Prop("s3.proxy.url", Type.STRING, "", "HTTP(S) proxy URL for S3 requests.", L, "S3"),
    Prop("s3.proxy.user", Type.STRING, "", "Proxy user name.", L, "S3"),
    Prop("s3.proxy.password", Type.PASSWORD, None, "Proxy password.", L, "S3"),
)

# ---------------------------------------------------------------------------------------------------- formats
FORMAT = ConfigDef("format").define(
    Prop(
        "format.class",
        Type.CLASS,
        REQUIRED,
        "Format of the objects: json, bytearray, avro, parquet, block_gzip (DeviantArt's Block-GZIP: lines in gzip "
        "blocks with a <name>.index seek index), csv and csv_withheaders (Lenses' CSV: struct values' fields, "
        "every field quoted; the second starts each object with the field names), lenses_json, lenses_text and "
        "lenses_bytes (Lenses' JSON, TEXT and BYTES objects; KCQL's STOREAS picks them), or a Confluent class name "
        "(io.confluent.connect.s3.format.avro.AvroFormat...), or a dotted path to a Python Format class. Required by "
        "a backup; a restore, read, verify and the DataFrame reader find it (with its compression, the sidecars' "
        "formats and store.envelope) in the bucket when it is not set, and refuse a setting contradicting the bucket.",
        H,
        "Connector",
        Plugin(FORMATS),
    ),
    Prop(
        "s3.compression.type",
        Type.STRING,
        "none",
        "Compression of JSON and ByteArray objects: none, gzip, or zstd (zstd is a kafka-s3 extension).",
        L,
        "S3",
        OneOf(("none", "gzip", "zstd")),
    ),
    Prop(
        "s3.compression.level",
        Type.INT,
        "-1",
        "Compression level for gzip (0-9: zlib's levels, as Confluent; -1: ISA-L's fast level 1, about 15x faster "
        "than zlib's default level 6 for ~25% larger objects) or zstd (1-22; -1: 3).",
        L,
        "S3",
        Range(-1, 22),
    ),
    Prop(
        "avro.codec",
        Type.STRING,
        "null",
        "Avro container codec: null, deflate, snappy, bzip2, xz, zstandard.",
        L,
        "Connector",
        OneOf(("null", "deflate", "snappy", "bzip2", "xz", "zstandard")),
    ),
    Prop(
        "avro.deflate.level",
        Type.INT,
        "-1",
        "Level of avro.codec=deflate: 0-9 are zlib's levels (Confluent's connector always uses 6); -1: ISA-L's fast "
        "level 1, about 15x faster than zlib's 6 for ~25% larger blocks.",
        L,
        "Connector",
        Range(-1, 9),
        origin="kafka-s3",
    ),
    Prop(
        "parquet.codec",
        Type.STRING,
        "snappy",
        "Parquet compression codec: none, snappy, gzip, zstd, lz4.",
        L,
        "Connector",
        OneOf(("none", "snappy", "gzip", "zstd", "lz4")),
    ),
    Prop(
        "format.bytearray.extension",
        Type.STRING,
        ".bin",
        "Extension of ByteArrayFormat objects (before any compression suffix).",
        L,
        "S3",
    ),
    Prop(
        "format.bytearray.separator",
        Type.STRING,
        None,
        "Text written (UTF-8) after each record by ByteArrayFormat, verbatim as Confluent takes it: only the "
        "config file's own escapes apply (\\n in a .properties file or a JSON string is a newline). Defaults to "
        "the line separator (\\n).",
        L,
        "S3",
    ),
    Prop(
        "store.kafka.keys",
        Type.BOOLEAN,
        "false",
        "Also write each object's record keys to a sidecar object <name>.keys.<ext>.",
        L,
        "Connector",
    ),
    Prop(
        "tombstone.encoded.partition",
        Type.STRING,
        "tombstone",
        "Directory (encoded partition) of null-valued records (tombstones) under behavior.on.null.values=write "
        "(Confluent's TombstoneSupportedPartitioner): only their .keys and .headers sidecars are written there. A "
        "restore reads the keys sidecars without a value object in that directory as tombstones.",
        L,
        "Connector",
    ),
    Prop(
        "store.kafka.headers",
        Type.BOOLEAN,
        "false",
        "Also write each object's record headers to a sidecar object <name>.headers.<ext>.",
        L,
        "Connector",
    ),
    Prop(
        "keys.format.class",
        Type.CLASS,
        "avro",
        "Format of keys sidecar objects.",
        L,
        "Connector",
        Plugin(FORMATS),
    ),
    Prop(
        "headers.format.class",
        Type.CLASS,
        "avro",
        "Format of headers sidecar objects.",
        L,
        "Connector",
        Plugin(FORMATS),
    ),
    Prop(
        "store.envelope",
        Type.BOOLEAN,
        "false",
        "Store every record whole (key, value, headers with repeated keys and order, timestamp, timestamp type, "
        "topic, partition, offset) in Avro, Parquet or JSON objects, so a restore is exact. Tombstones are kept. "
        "Parquet (format.class=parquet) is the fastest of the three to restore.",
        H,
        "Connector",
        origin="kafka-s3",
    ),
    Prop(
        "key.converter",
        Type.CLASS,
        "bytearray",
        "Converter of record keys (ByteArrayConverter, StringConverter, JsonConverter, AvroConverter...); settings "
        "under key.converter.*.",
        M,
        "Connector",
        Plugin(CONVERTERS),
    ),
    Prop(
        "value.converter",
        Type.CLASS,
        "bytearray",
        "Converter of record values; settings under value.converter.* (e.g. value.converter.schemas.enable, or "
        "value.converter.schema.registry.url for io.confluent.connect.avro.AvroConverter, which reads the Schema "
        "Registry wire format). In Kafka Connect the worker sets a default; kafka-s3 defaults to ByteArrayConverter "
        "(raw bytes).",
        H,
        "Connector",
        Plugin(CONVERTERS),
    ),
    Prop(
        "schema.compatibility",
        Type.STRING,
        "NONE",
        "Schema evolution when a record's schema differs from its file's: NONE rolls the file; BACKWARD and FULL "
        "roll on a newer schema version and project older records to the file's (latest) schema; FORWARD rolls on "
        "an older version and projects newer records to the file's (oldest) schema. A record that cannot be "
        "projected rolls the file.",
        H,
        "Schema",
        OneOf(("NONE", "BACKWARD", "FORWARD", "FULL")),
    ),
)

# ---------------------------------------------------------------------------------------------------- partitioners
#: partition.path.style's values (KCQL's WITHPARTITIONER takes them too)
PATH_STYLES = ("KeysAndValues", "Values")
PARTITIONER = ConfigDef("partitioner").define(
    Prop(
        "partitioner.class",
        Type.CLASS,
        "default",
        "Partitioner: default, field, time_based, daily, hourly, kcql (KCQL's PARTITIONBY: value fields, key and "
        "headers), a Confluent class name, or a dotted path to a Python Partitioner class.",
        H,
        "Partitioner",
        Plugin(PARTITIONERS),
    ),
    Prop(
        "partition.field.name",
        Type.LIST,
        "",
        "Value fields used by the field partitioner (nested fields with dots). The kcql partitioner also takes "
        "_key, _key.<field> and _header.<name>.",
        M,
        "Partitioner",
    ),
    Prop(
        "partition.path.style",
        Type.STRING,
        "Values",
        "Directories of partitioner.class=kcql (KCQL's WITHPARTITIONER): Values gives value1/value2, KeysAndValues "
        "gives field1=value1/field2=value2, for the partition.field.name fields.",
        M,
        "Partitioner",
        OneOf(PATH_STYLES),
        origin="kafka-s3",
    ),
    Prop(
        "partition.duration.ms",
        Type.LONG,
        "-1",
        "Duration of a time partition (TimeBasedPartitioner).",
        M,
        "Partitioner",
        Range(-1),
    ),
    Prop(
        "path.format",
        Type.STRING,
        "",
        "Joda-style pattern of time partition directories, literals single-quoted: "
        "'year'=YYYY/'month'=MM/'day'=dd/'hour'=HH.",
        M,
        "Partitioner",
    ),
    Prop(
        "locale",
        Type.STRING,
        "",
        "Locale of time formatting (e.g. en-US).",
        M,
        "Partitioner",
        Check(_locale_error, "a locale tag"),
    ),
    Prop(
        "timezone",
        Type.STRING,
        "",
        "Time zone of time partitions and scheduled rotation (e.g. UTC, America/Los_Angeles).",
        M,
        "Partitioner",
        Check(timezone_error, "a time zone id"),
    ),
    Prop(
        "timestamp.extractor",
        Type.STRING,
        "Wallclock",
        "Where a record's time comes from: Wallclock, Record (Kafka timestamp) or RecordField (timestamp.field).",
        M,
        "Partitioner",
        Plugin(EXTRACTORS),
    ),
    Prop(
        "timestamp.field",
        Type.STRING,
        "timestamp",
        "Value field holding the record time (RecordField extractor): epoch ms number, or ISO-8601 string.",
        M,
        "Partitioner",
    ),
)

# Keys of Kafka Connect / Confluent we accept without effect (warned once).
UNSUPPORTED = {
    "schema.generator.class": "Hive schema generation is not used.",
    "hive.integration": "Hive integration is not supported.",
    "hive.metastore.uris": "Hive integration is not supported.",
    "hive.conf.dir": "Hive integration is not supported.",
    "hive.home": "Hive integration is not supported.",
    "hive.database": "Hive integration is not supported.",
    "confluent.license": "No license is needed.",
    "confluent.topic.bootstrap.servers": "No license topic is used.",
    "confluent.topic.replication.factor": "No license topic is used.",
    "s3.wan.mode": "S3 transfer acceleration is not supported.",
    "enhanced.avro.schema.support": "Avro schemas are written as given.",
    "connect.meta.data": "Connect metadata (connect.name, connect.version...) is always added, as the S3 sink does.",
    "schema.cache.size": "Schema caching needs no tuning.",
    "retry.backoff.ms": "S3 retries use s3.retry.backoff.ms.",
    "shutdown.timeout.ms": "Shutdown waits for the current cycle.",
    "s3.elastic.buffer.enable": "Upload buffers are always bounded (they spill to disk).",
    "s3.elastic.buffer.init.capacity": "Upload buffers are always bounded (they spill to disk).",
    "errors.tolerance": "Use behavior.on.error / behavior.on.null.values.",
    "errors.log.enable": "Errors are always logged.",
    "errors.log.include.messages": "Errors are always logged.",
    "errors.deadletterqueue.topic.name": "Dead letter queues are not supported.",
    "errors.deadletterqueue.context.headers.enable": "Dead letter queues are not supported.",
    "errors.deadletterqueue.topic.replication.factor": "Dead letter queues are not supported.",
    "header.converter": "Headers are stored as raw bytes.",
    "config.action.reload": "Configuration is read at start.",
    "allow.optional.map.keys": "Not needed.",
    "s3.schema.partition.affix.type": "Not supported.",
    "avro.schemas.cache.size": "Not needed.",
    "value.converter.schemas.cache.size": "Not needed.",
    "aws.auth.mode": "Credentials come from aws.access.key.id/aws.secret.access.key or the default AWS chain.",
    "aws.vhost.bucket": "Use s3.path.style.access.enabled=false for virtual-hosted buckets.",
}

PASSTHROUGH = (
    "key.converter.",
    "value.converter.",
    "consumer.override.",
    "producer.override.",
    "admin.override.",
    "consumer.",
    "producer.",
    "transforms.",
    "predicates.",
    "sasl.",
    "ssl.",
    "client.",
    "topic.creation.",
    "spark.",
)
