"""What ``restore --consumer-groups`` (and its dry run, and ``kafka-s3 groups``) says about a plan: snapshots,
translations, groups refused for active members or for a missing ACL (issue 13 item 3)."""

from __future__ import annotations

from kafka_s3.core.groups import Translation
from kafka_s3.pipelines.restore.groups import GroupsPlan


def test_lines_name_the_acl_a_group_lacks():
    plan = GroupsPlan(
        translations=[Translation("app-a", "orders", 0, 4, "orders-copy", 0, 4, "record")],
        snapshots={"orders": 1700000000000},
        active={"app-c": 2},
        denied={"app-b": "User:restore lacks READ on group 'app-b'"},
    )
    assert plan.lines() == [
        "orders: consumer-group snapshot of 1700000000000 ms",
        "group app-a: orders[0] 4 -> orders-copy[0] 4",
        "group app-c: refused, 2 active member(s) on the target cluster",
        "group app-b: cannot be committed: User:restore lacks READ on group 'app-b'",
    ]
