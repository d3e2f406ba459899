"""The restore of an Iceberg sink configuration: its tables' snapshots planned on the driver, their data files read in
Spark tasks and produced through the restore's transactional path."""
