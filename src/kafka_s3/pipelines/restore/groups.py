"""``restore --consumer-groups``: the recorded groups' source offsets translated to the target's, and committed.

The backup recorded each group's committed offsets per topic (snapshots, :mod:`kafka_s3.core.groups`); the restore
recorded, in the target cluster's offset-map topic and in the same transaction as its progress, which target offsets
its source offsets went to. A group committed at source offset ``o`` resumes at the target offset of the first
restored record at or after ``o``; past the restored records, at the target partition's end.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kafka_s3.core.groups import Translation


@dataclass
class GroupsPlan:
    """What ``restore --consumer-groups`` commits (or, in a dry run, would commit)."""

    translations: list[Translation] = field(default_factory=list)
    snapshots: dict[str, int | None] = field(default_factory=dict)  # source topic -> snapshot time used (ms)
    active: dict[str, int] = field(default_factory=dict)  # groups with members on the target: refused
    denied: dict[str, str] = field(default_factory=dict)  # group -> the ACL its commit lacks (a dry run's finding)
    committed: bool = False

    def lines(self) -> list[str]:
        out = []
        for topic, at in sorted(self.snapshots.items()):
            when = "no consumer-group snapshot recorded" if at is None else f"consumer-group snapshot of {at} ms"
            out.append(f"{topic}: {when}")
        out.extend(t.line() for t in self.translations)
        for group, members in sorted(self.active.items()):
            out.append(f"group {group}: refused, {members} active member(s) on the target cluster")
        for group, needed in sorted(self.denied.items()):
            out.append(f"group {group}: cannot be committed: {needed}")
        return out
