"""Kafka through confluent-kafka (librdkafka): admin calls, the offset-range reader, client settings."""
