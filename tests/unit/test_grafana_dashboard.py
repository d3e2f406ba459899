"""docs/grafana/kafka-s3.json and docs/operations.md's alert rules (issue 29 item 4): the dashboard is JSON Grafana can
import, and every metric the dashboard and the rules query is one kafka-s3 exposes (a renamed metric breaks them)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from kafka_s3.core.metrics import metric_names

pytestmark = pytest.mark.issue(29, item=4)

ROOT = Path(__file__).resolve().parents[2]
EXPOSED = metric_names("backup") | metric_names("restore")
METRIC = re.compile(r"\bkafka_s3_[a-z_]+")


def _queries(dashboard: dict) -> list[str]:
    return [target["expr"] for panel in dashboard["panels"] for target in panel["targets"]]


def test_the_dashboard_parses_and_queries_only_metrics_that_exist() -> None:
    dashboard = json.loads((ROOT / "docs/grafana/kafka-s3.json").read_text())
    queries = _queries(dashboard)
    assert dashboard["title"] == "kafka-s3" and queries
    referenced = {name for query in queries for name in METRIC.findall(query)}
    assert referenced <= EXPOSED, sorted(referenced - EXPOSED)
    assert metric_names("backup") <= referenced | {"kafka_s3_backup_cycle_duration_seconds_count"}
    panel_ids = [panel["id"] for panel in dashboard["panels"]]
    assert len(set(panel_ids)) == len(panel_ids)


def test_the_monitoring_section_names_only_metrics_that_exist() -> None:
    text = (ROOT / "docs/operations.md").read_text()
    section = text[text.index("## Monitoring") :]
    section = section[: section.index("\n## ", 1)]
    named = {
        name.replace("<side>", side)
        for name in re.findall(r"kafka_s3_[a-z_<>]+", section)
        for side in ("backup", "restore")
    }
    assert "kafka_s3_backup_lag_records" in named
    assert {name for name in named if "<" not in name} <= EXPOSED | {
        base[: -len("_bucket")] for base in EXPOSED if base.endswith("_bucket")
    }, sorted(named - EXPOSED)
