"""A backup into an Apache Iceberg table: tasks write Parquet data files under the table's data location, the driver
commits one snapshot per cycle recording every topic-partition's next offset (:mod:`.driver`)."""
