"""``kafka-s3 status``: where a backup stands, per partition, from Kafka alone (group offsets and their metadata)."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from kafka_s3.core.config.model import Config
from kafka_s3.io.kafka.admin import Admin
from kafka_s3.io.kafka.settings import client_settings
from kafka_s3.pipelines.backup.driver import group_id


def backup_status(config: Config) -> list[dict[str, Any]]:
    admin = Admin(client_settings(config, "admin", warn=False), connect_timeout=config["service.timeout.ms"] / 1000)
    topics = admin.select_topics(config["topics"], config["topics.regex"])
    tps = [(t, p) for t, n in sorted(topics.items()) for p in range(n)]
    group = group_id(config)
    committed = admin.group_offsets_with_metadata(group, tps)
    ends = admin.end_offsets(tps, read_committed=config["isolation.level"] == "read_committed")
    rows = []
    for tp in tps:
        offset, metadata = committed.get(tp, (None, ""))
        info = {}
        if metadata:
            try:
                info = json.loads(metadata)
            except ValueError:
                info = {}
        at = info.get("at")
        rows.append(
            {
                "group": group,
                "topic": tp[0],
                "partition": tp[1],
                "committed": offset,
                "end": ends[tp],
                "lag": None if offset is None else max(0, ends[tp] - offset),
                "last_object": info.get("object") or None,
                "last_commit": dt.datetime.fromtimestamp(at / 1000, dt.UTC).isoformat(timespec="seconds")
                if at
                else None,
            }
        )
    return rows
