"""Iceberg's catalogs at the edge: the catalog an Iceberg sink configuration names, opened with pyiceberg, its
warehouse reached with the backup's own S3 settings (``catalog``)."""

from kafka_s3.io.iceberg.catalog import catalog_from_config, catalog_properties_from_config

__all__ = ["catalog_from_config", "catalog_properties_from_config"]
