"""A backup as an Apache Iceberg table, the pure parts: the envelope's columns with Iceberg field ids, the partition
spec of ``iceberg.tables.default-partition-by`` and its per-record values, and the snapshot summary that records
each topic-partition's next offset (what makes a table's snapshot the backup's committed position)."""
