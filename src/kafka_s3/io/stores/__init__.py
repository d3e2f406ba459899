"""Object stores behind one interface: S3 (boto3) and a local directory."""

from kafka_s3.core.registry import Registry

REGISTRY: Registry = Registry("store", "storage.class")
REGISTRY.register(
    "s3",
    "kafka_s3.io.stores.s3:S3Store",
    aliases=("io.confluent.connect.s3.storage.S3Storage", "S3Storage"),
)
REGISTRY.register("local", "kafka_s3.io.stores.local:LocalStore", aliases=("file",))
