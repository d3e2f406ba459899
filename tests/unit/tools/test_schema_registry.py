"""Issue 17 item 6: the project's test registry speaks Confluent's modes, so that ``restore --schemas`` preserving
ids through IMPORT mode is tested for real."""

from __future__ import annotations

import json
from typing import Any
from urllib.error import HTTPError
from urllib.request import Request, urlopen

from tools.schema_registry import SchemaRegistryServer

STRING = json.dumps({"type": "string"})
RECORD = json.dumps({"type": "record", "name": "R", "fields": [{"name": "a", "type": "string"}]})


def call(server: SchemaRegistryServer, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    data = json.dumps(body).encode() if body is not None else None
    request = Request(server.url + path, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urlopen(request) as response:
            return response.status, json.loads(response.read())
    except HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_registry_import_mode_keeps_explicit_ids_and_versions() -> None:
    with SchemaRegistryServer() as server:
        assert call(server, "GET", "/mode") == (200, {"mode": "READWRITE"})
        assert call(server, "PUT", "/mode", {"mode": "IMPORT"}) == (200, {"mode": "IMPORT"})
        assert call(server, "POST", "/subjects/t-value/versions", {"schema": RECORD, "id": 42, "version": 3}) == (
            200,
            {"id": 42},
        )
        assert call(server, "GET", "/subjects/t-value/versions") == (200, [3])
        status, found = call(server, "GET", "/subjects/t-value/versions/3")
        assert (status, found["id"], found["version"]) == (200, 42, 3)
        assert call(server, "GET", "/schemas/ids/42")[1] == {"schema": RECORD}
        # without an id, IMPORT mode refuses; another schema under a used id is refused
        assert call(server, "POST", "/subjects/t-value/versions", {"schema": STRING})[1]["error_code"] == 42205
        refused = call(server, "POST", "/subjects/u-value/versions", {"schema": STRING, "id": 42, "version": 1})
        assert refused == (422, {"error_code": 42205, "message": "Overwrite new schema with id 42 is not permitted."})
        # back to READWRITE: new schemas get ids after the imported ones; explicit ids are refused
        assert call(server, "PUT", "/mode", {"mode": "READWRITE"}) == (200, {"mode": "READWRITE"})
        assert call(server, "POST", "/subjects/u-value/versions", {"schema": STRING}) == (200, {"id": 43})
        status, body = call(server, "POST", "/subjects/v-value/versions", {"schema": RECORD, "id": 7})
        assert (status, body["error_code"]) == (422, 42205)
        # IMPORT needs an empty scope (unless forced); an empty subject may switch on its own
        status, body = call(server, "PUT", "/mode", {"mode": "IMPORT"})
        assert (status, body) == (422, {"error_code": 42205, "message": "Cannot import since found existing subjects"})
        assert call(server, "PUT", "/mode/u-value", {"mode": "IMPORT"})[1]["error_code"] == 42205
        assert call(server, "GET", "/mode/w-value")[1]["error_code"] == 40409
        assert call(server, "GET", "/mode/w-value?defaultToGlobal=true") == (200, {"mode": "READWRITE"})
        assert call(server, "PUT", "/mode/w-value", {"mode": "IMPORT"}) == (200, {"mode": "IMPORT"})
        assert call(server, "POST", "/subjects/w-value/versions", {"schema": STRING, "id": 43, "version": 1}) == (
            200,
            {"id": 43},
        )
        assert call(server, "DELETE", "/mode/w-value") == (200, {"mode": "IMPORT"})
        assert call(server, "PUT", "/mode?force=true", {"mode": "READONLY"}) == (200, {"mode": "READONLY"})
        assert call(server, "POST", "/subjects/x-value/versions", {"schema": STRING})[1]["error_code"] == 42205
