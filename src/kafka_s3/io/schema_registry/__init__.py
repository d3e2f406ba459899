"""Confluent Schema Registry: the client settings and client, and the AvroConverter that needs them."""
