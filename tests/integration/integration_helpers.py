"""Plain helpers shared by the backup and restore integration tests (a uniquely named module: every test directory
can import it without clashing with a directory's own helpers)."""

from __future__ import annotations

import json

QUICKSTART_SCHEMA = {"type": "struct", "name": "myrecord", "optional": False,
                     "fields": [{"field": "f1", "type": "string", "optional": False}]}


def quickstart_values(with_schema: bool) -> list[bytes]:
    out = []
    for i in range(1, 10):
        payload = {"f1": f"value{i}"}
        doc = {"schema": QUICKSTART_SCHEMA, "payload": payload} if with_schema else payload
        out.append(json.dumps(doc).encode())
    return out


def list_keys(s3_client, bucket: str, prefix: str = "") -> list[str]:
    keys = []
    for page in s3_client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        keys.extend(item["Key"] for item in page.get("Contents", []))
    return sorted(keys)
