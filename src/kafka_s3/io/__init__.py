"""The edges that talk to other systems: Kafka (admin, reader, client settings), object stores, Schema Registry.

Built on the core (records, config, errors); knows nothing of pipelines or Spark.
"""
