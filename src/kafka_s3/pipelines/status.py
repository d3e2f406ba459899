"""``kafka-s3 status``: where a backup stands, per partition, from Kafka alone (group offsets and their metadata)."""

from __future__ import annotations

import datetime as dt
import json

from kafka_s3.pipelines.backup.driver import group_id
from kafka_s3.core.config.model import Config
from kafka_s3.io.kafka.admin import Admin
from kafka_s3.io.kafka.settings import client_settings


def backup_status(config: Config) -> list[dict]:
    admin = Admin(client_settings(config, "admin", warn=False))
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
                "last_commit": dt.datetime.fromtimestamp(at / 1000, dt.timezone.utc).isoformat(timespec="seconds")
                if at
                else None,
            }
        )
    return rows


def render_status(rows: list[dict]) -> str:
    from io import StringIO

    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"backup status (group {rows[0]['group']})" if rows else "backup status")
    for column in ("topic", "partition", "committed", "end", "lag", "last object", "last commit (UTC)"):
        table.add_column(column)
    for r in rows:
        table.add_row(
            r["topic"],
            str(r["partition"]),
            "-" if r["committed"] is None else str(r["committed"]),
            str(r["end"]),
            "-" if r["lag"] is None else str(r["lag"]),
            r["last_object"] or "-",
            r["last_commit"] or "-",
        )
    out = StringIO()
    Console(file=out, width=200).print(table)
    return out.getvalue()
