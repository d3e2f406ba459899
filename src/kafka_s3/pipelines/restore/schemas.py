"""``restore --schemas``: the backup's saved Schema Registry subjects written into the target registry, each as the
target's mode for it allows (IMPORT: under their own ids; otherwise registered, and the ids that move rewritten in the
restored payloads), and the dry run's account of what that would do.
"""

from __future__ import annotations

import dataclasses
import logging

from kafka_s3.core.errors import ConfigError
from kafka_s3.core.schemas import SERIES as SCHEMAS
from kafka_s3.core.schemas import SavedSchemas
from kafka_s3.pipelines.restore.context import RestoreContext
from kafka_s3.pipelines.restore.plan import RestorePlanSet
from kafka_s3.pipelines.restore.task import RestorePlan

log = logging.getLogger("kafka_s3.restore")


class SchemaImport:
    def __init__(self, ctx: RestoreContext):
        self.ctx = ctx

    def saved(self, plan_set: RestorePlanSet) -> list[SavedSchemas]:
        """The newest saved subjects of each source topic (at or before ``--until-timestamp`` when given)."""
        manifests = self.ctx.plugins.manifests(self.ctx.store)
        out = []
        for topic in sorted(plan_set.targets):
            saved = manifests.newest(SCHEMAS, topic, self.ctx.options.until_timestamp)
            if saved is not None:
                out.append(saved)
        return out

    def plan(self, plan_set: RestorePlanSet) -> str:
        """Dry run of ``--schemas``: per subject, the target registry's mode and so what the restore does (IMPORT:
        imported under the source's ids; READWRITE: registered, the target assigns ids); which saved versions keep
        their ids, which get others (rewritten in the payloads) and which are not there yet."""
        from kafka_s3.io.schema_registry.subjects import IMPORT, READONLY, SchemaImport, predict_ids, registry_for

        client = registry_for(self.ctx.config.originals)
        if client is None:
            return "schemas: no target Schema Registry (set schemas.registry.url): restore --schemas would fail"
        saved = self.saved(plan_set)
        if not saved:
            return "schemas: the backup saved no Schema Registry subjects for these topics"
        predicted = SchemaImport()
        for record in saved:
            one = predict_ids(client, record)
            predicted.ids.update(one.ids)
            predicted.modes.update(one.modes)
            predicted.conflicts.update(one.conflicts)
        same = sorted(old for old, new in predicted.ids.items() if new == old)
        moved = sorted((old, new) for old, new in predicted.ids.items() if new is not None and new != old)
        missing = sorted(old for old, new in predicted.ids.items() if new is None)
        subjects = ", ".join(sorted(predicted.modes))
        parts = [f"schemas ({subjects}): {len(same)} id(s) preserved"]
        if moved:
            parts.append("rewritten in payloads: " + ", ".join(f"{old}->{new}" for old, new in moved))
        if missing:
            parts.append(
                f"{len(missing)} version(s) not in the target registry yet (ids {', '.join(map(str, missing))}): "
                "registered, and rewritten in payloads where the target assigns other ids"
            )
        for subject, mode in sorted(predicted.modes.items()):
            if subject in predicted.conflicts:
                held = ", ".join(map(str, predicted.conflicts[subject]))
                parts.append(
                    f"{subject}: target mode IMPORT, but other schemas hold id(s) {held} there: "
                    "restore --schemas would fail"
                )
            elif mode == IMPORT:
                parts.append(f"{subject}: target mode IMPORT, imported under the source's ids and versions")
            elif mode == READONLY:
                parts.append(f"{subject}: target mode READONLY: restore --schemas would fail")
            else:
                parts.append(f"{subject}: target mode {mode}, registered (ids the target assigns)")
        return "; ".join(parts)

    def run(self, plan_set: RestorePlanSet) -> list[RestorePlan]:
        """``--schemas``: write the saved subjects into the target registry (IMPORT mode: under their own ids, else
        registered); where the target has other ids, the plans rewrite them in the restored payloads."""
        from kafka_s3.io.schema_registry.subjects import IMPORT, import_subjects, registry_for

        client = registry_for(self.ctx.config.originals)
        if client is None:
            raise ConfigError(
                "restore --schemas needs the target Schema Registry: set schemas.registry.url",
                key="schemas.registry.url",
            )
        saved = self.saved(plan_set)
        if not saved:
            log.warning("restore --schemas: the backup saved no Schema Registry subjects for these topics")
        ids: dict[int, int] = {}
        imported: list[str] = []
        for record in saved:
            result = import_subjects(client, record)
            ids.update({old: new for old, new in result.ids.items() if new is not None})
            imported += [s for s, mode in result.modes.items() if mode == IMPORT]
            log.info(
                "wrote subjects %s into the target registry (%s)",
                ", ".join(sorted(record.subjects)),
                ", ".join(f"{s}: {m}" for s, m in sorted(result.modes.items())),
            )
        moved = tuple(sorted((old, new) for old, new in ids.items() if old != new))
        plan_set.schema_note = schema_note(len(ids), moved, tuple(sorted(imported)))
        log.info("%s", plan_set.schema_note)
        return [dataclasses.replace(p, schema_ids=moved) for p in plan_set.plans]


def schema_note(registered: int, moved: tuple[tuple[int, int], ...], imported: tuple[str, ...] = ()) -> str:
    """What ``restore --schemas`` does with the schema ids, in words (the plan and the summary say it)."""
    how = f" (imported in IMPORT mode: {', '.join(imported)})" if imported else ""
    if not moved:
        return f"schemas: {registered} schema version(s) written into the target registry{how}, ids preserved"
    pairs = ", ".join(f"{old}->{new}" for old, new in moved)
    return (
        f"schemas: {registered} schema version(s) written into the target registry{how}, some under other ids; the "
        f"restore rewrites them in each wire-format key and value ({pairs})"
    )
