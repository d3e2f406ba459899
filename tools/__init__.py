"""Dev and test tooling, outside the wheel: the local services (``services``, ``kafka_broker``), a Schema-Registry-
compatible server, a secured Apache Kafka, a Spark standalone cluster and the demo. Run from the repository root
(``python -m tools.services up``); the ``kafka_s3`` package never imports it."""
