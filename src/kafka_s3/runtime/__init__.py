"""What runs inside a Spark worker's Python process besides the pipelines' tasks: the import guard that keeps pandas
out (:mod:`.lean`), the per-worker cache of plugins and clients (:mod:`.worker_cache`), returning freed Arrow memory
to the system (:mod:`.worker_memory`) and the running counts a task sends the driver's progress bar (:mod:`.live`).

Nothing here knows Kafka, S3 or the formats: the pipelines and the Spark engine use it.
"""
