"""pyiceberg's pyarrow file IO, verifying an https:// store against the backup's CA bundle (``s3.ssl.ca.bundle`` or
``$AWS_CA_BUNDLE``): pyiceberg has no setting for it, pyarrow's S3 file system has (``tls_ca_file_path``)."""

from __future__ import annotations

from typing import Any

from pyiceberg.io.pyarrow import PyArrowFileIO

from kafka_s3.io.iceberg.catalog import CA_BUNDLE


class StoreFileIO(PyArrowFileIO):
    """The pyarrow file IO, its S3 file systems built with the store's CA bundle."""

    def _initialize_s3_fs(self, netloc: str | None) -> Any:
        filesystem = super()._initialize_s3_fs(netloc)
        ca_file = self.properties.get(CA_BUNDLE)
        if not ca_file:
            return filesystem
        rebuild, (settings,) = filesystem.__reduce__()
        return rebuild({**settings, "tls_ca_file_path": ca_file})
