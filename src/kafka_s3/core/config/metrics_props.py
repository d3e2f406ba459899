"""Monitoring properties shared by ``backup --follow`` and ``restore --follow``: where the Prometheus endpoint
listens and when its ``/healthz`` turns unhealthy (:mod:`kafka_s3.core.metrics`)."""

from __future__ import annotations

from kafka_s3.core.config.model import ConfigDef, Importance, Prop, Range, Type

METRICS = ConfigDef("metrics").define(
    Prop(
        "metrics.port",
        Type.INT,
        "0",
        "In --follow mode, serve Prometheus metrics on this TCP port (/metrics, and /healthz: 200 while healthy, 503 "
        "when unhealthy); 0 serves none. The command line's --metrics-port sets it.",
        Importance.LOW,
        "kafka-s3",
        Range(0, 65535),
        origin="kafka-s3",
    ),
    Prop(
        "metrics.bind.address",
        Type.STRING,
        "0.0.0.0",
        "Address the metrics endpoint listens on: every interface by default, so that a Prometheus server on "
        "another host can scrape it; 127.0.0.1 keeps it to this host.",
        Importance.LOW,
        "kafka-s3",
        origin="kafka-s3",
    ),
    Prop(
        "metrics.unhealthy.after.cycles",
        Type.INT,
        "5",
        "/healthz answers 503 once this many cycles in a row committed nothing while records were waiting (lag > 0): "
        "a stalled backup or restore, not an idle one.",
        Importance.LOW,
        "kafka-s3",
        Range(1),
        origin="kafka-s3",
    ),
)
