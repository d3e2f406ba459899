"""kafka-s3: Kafka topics backed up to S3-compatible storage and restored, on Spark."""

__version__ = "0.1.0"
