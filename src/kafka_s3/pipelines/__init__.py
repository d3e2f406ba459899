"""The pipelines: backup, restore, reading a backup, status — plans, per-partition work and commits.

They run their per-partition tasks through an :class:`~kafka_s3.pipelines.engine.Engine` (Spark, provided by
:mod:`kafka_s3.spark`), so nothing here imports Spark.
"""
