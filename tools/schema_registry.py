"""A minimal Schema-Registry-compatible HTTP server, for tests and demos (no real registry installs here: Confluent's
is Java, karapace is not on the reachable package index).

It implements the part of Confluent's REST API (v1) that confluent-kafka's ``SchemaRegistryClient`` uses to
register, look up and fetch schemas, in memory:

- ``GET /schemas/ids/{id}``, ``GET /schemas/ids/{id}/versions``, ``GET /schemas/ids/{id}/subjects``,
  ``GET /schemas/types``;
- ``GET /subjects``, ``GET /subjects/{subject}/versions``, ``GET /subjects/{subject}/versions/{version|latest}``,
  ``POST /subjects/{subject}/versions`` (register: the same schema gets the same id in every subject, and
  registering it again returns its id), ``POST /subjects/{subject}`` (look up), ``DELETE /subjects/{subject}``;
- ``GET|PUT /config`` and ``/config/{subject}`` (the level is stored, not enforced: every schema is accepted);
- ``GET|PUT /mode`` and ``GET|PUT|DELETE /mode/{subject}`` (``READWRITE`` by default, ``READONLY``, ``IMPORT``), as
  Confluent's registry enforces them: switching a scope to ``IMPORT`` needs it empty (no subject at all for the
  global mode, no version of the subject for a subject's mode) unless ``?force=true``; in ``IMPORT`` mode a
  registration must name its ``id`` (and may name its ``version``), and an id already held by another schema is
  refused; in ``READWRITE`` mode an explicit ``id`` is refused unless the schema already has it; ``READONLY`` refuses
  every registration. ``GET /mode/{subject}`` without a subject-level mode answers 40409 unless
  ``?defaultToGlobal=true``.

Errors use the registry's codes (40401 subject not found, 40402 version not found, 40403 schema not found, 40409
subject mode not configured, 42201 invalid schema, 42204 invalid mode, 42205 operation not permitted). Optional
HTTP basic authentication (``users``) and TLS (``certfile``/``keyfile``) exercise the clients' settings.
Run one with ``python -m tools.schema_registry --port 8081``.
"""

from __future__ import annotations

import argparse
import base64
import json
import re
import ssl
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlparse


@dataclass
class _Registry:
    schemas: dict[int, dict[str, Any]] = field(default_factory=dict)  # id -> {"schema", "schemaType", "references"}
    ids: dict[str, int] = field(default_factory=dict)  # canonical form -> the id it got first
    subjects: dict[str, dict[int, int]] = field(default_factory=dict)  # subject -> version -> schema id
    config: dict[str, str] = field(default_factory=dict)  # "" (global) or subject -> compatibility level
    modes: dict[str, str] = field(default_factory=dict)  # "" (global) or subject -> mode
    lock: threading.Lock = field(default_factory=threading.Lock)

    def mode(self, subject: str) -> str:
        return self.modes.get(subject, self.modes.get("", "READWRITE"))

    @staticmethod
    def canonical(body: dict[str, Any]) -> str:
        schema_type = body.get("schemaType") or "AVRO"
        text = body["schema"]
        if schema_type in ("AVRO", "JSON"):
            text = json.dumps(json.loads(text), sort_keys=True, separators=(",", ":"))
        return json.dumps([schema_type, text, body.get("references") or []], sort_keys=True)


class RegistryError(Exception):
    def __init__(self, status: int, code: int, message: str):
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


class _Handler(BaseHTTPRequestHandler):
    server: SchemaRegistryServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet: tests read their own output
        pass

    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")

    def do_PUT(self) -> None:
        self._serve("PUT")

    def do_DELETE(self) -> None:
        self._serve("DELETE")

    def _serve(self, method: str) -> None:
        url = urlparse(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        self.server.requests.append((method, url.path))
        try:
            self._authenticate()
            body = json.loads(raw) if raw else {}
            status, payload = 200, self.server.api(method, url.path, parse_qs(url.query), body)
        except RegistryError as exc:
            status, payload = exc.status, {"error_code": exc.code, "message": exc.message}
        except (ValueError, KeyError, TypeError) as exc:
            status, payload = 422, {"error_code": 42201, "message": f"Invalid schema or request: {exc}"}
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/vnd.schemaregistry.v1+json")
        self.send_header("Content-Length", str(len(data)))
        if status == 401:
            self.send_header("WWW-Authenticate", 'Basic realm="schema-registry"')
        self.end_headers()
        self.wfile.write(data)

    def _authenticate(self) -> None:
        users = self.server.users
        if not users:
            return
        header = self.headers.get("Authorization", "")
        if header.startswith("Basic "):
            user, _, password = base64.b64decode(header[6:]).decode().partition(":")
            if users.get(user) == password:
                return
        raise RegistryError(401, 40101, "Unauthorized")


class SchemaRegistryServer(ThreadingHTTPServer):
    """The server; ``start()`` serves from a daemon thread, ``url`` is its address."""

    daemon_threads = True

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        users: dict[str, str] | None = None,
        certfile: str | None = None,
        keyfile: str | None = None,
    ):
        super().__init__((host, port), _Handler)
        self.users = users or {}
        self.registry = _Registry()
        self.requests: list[tuple[str, str]] = []
        self.tls = certfile is not None
        if certfile:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(certfile, keyfile)
            self.socket = context.wrap_socket(self.socket, server_side=True)
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"{'https' if self.tls else 'http'}://{host!s}:{port}"

    def start(self) -> SchemaRegistryServer:
        self._thread = threading.Thread(target=self.serve_forever, name="schema-registry", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self.shutdown()
        self.server_close()

    def __enter__(self) -> SchemaRegistryServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # ---------------------------------------------------------------------------------------------- the API
    def api(self, method: str, path: str, query: dict[str, list[str]], body: dict[str, Any]) -> Any:
        parts = [unquote(p) for p in path.strip("/").split("/") if p]
        reg = self.registry
        with reg.lock:
            if parts == [] and method == "GET":
                return {}
            if parts[:1] == ["schemas"]:
                return self._schemas(method, parts[1:])
            if parts[:1] == ["subjects"]:
                return self._subjects(method, parts[1:], query, body)
            if parts[:1] == ["mode"]:
                return self._mode(method, parts[1] if len(parts) > 1 else "", query, body)
            if parts[:1] == ["config"]:
                subject = parts[1] if len(parts) > 1 else ""
                if method == "PUT":
                    reg.config[subject] = body["compatibility"]
                    return {"compatibility": body["compatibility"]}
                if method == "GET":
                    return {"compatibilityLevel": reg.config.get(subject, reg.config.get("", "BACKWARD"))}
        raise RegistryError(404, 404, f"HTTP 404 Not Found: {method} {path}")

    def _mode(self, method: str, subject: str, query: dict[str, list[str]], body: dict[str, Any]) -> Any:
        reg = self.registry
        if method == "GET":
            if subject and subject not in reg.modes and query.get("defaultToGlobal", ["false"])[0].lower() != "true":
                raise RegistryError(404, 40409, f"Subject '{subject}' does not have subject-level mode configured")
            return {"mode": reg.mode(subject)}
        if method == "PUT":
            mode = str(body.get("mode", "")).upper()
            if mode not in ("READWRITE", "READONLY", "IMPORT"):
                raise RegistryError(422, 42204, f"Invalid mode {body.get('mode')!r}")
            force = query.get("force", ["false"])[0].lower() == "true"
            occupied = bool(reg.subjects.get(subject)) if subject else any(reg.subjects.values())
            if mode == "IMPORT" and reg.mode(subject) != "IMPORT" and occupied and not force:
                raise RegistryError(422, 42205, "Cannot import since found existing subjects")
            reg.modes[subject] = mode
            return {"mode": mode}
        if method == "DELETE" and subject:
            if subject not in reg.modes:
                raise RegistryError(404, 40409, f"Subject '{subject}' does not have subject-level mode configured")
            return {"mode": reg.modes.pop(subject)}
        raise RegistryError(405, 405, "Method not allowed")

    def _schema(self, schema_id: int) -> dict[str, Any]:
        stored = self.registry.schemas.get(schema_id)
        if stored is None:
            raise RegistryError(404, 40403, f"Schema {schema_id} not found")
        return stored

    def _schemas(self, method: str, parts: list[str]) -> Any:
        if method != "GET":
            raise RegistryError(405, 405, "Method not allowed")
        if parts == ["types"]:
            return ["AVRO", "JSON", "PROTOBUF"]
        if len(parts) >= 2 and parts[0] == "ids" and re.fullmatch(r"\d+", parts[1]):
            schema_id = int(parts[1])
            stored = self._schema(schema_id)
            if len(parts) == 2:
                return _schema_json(stored)
            pairs = [
                (s, v) for s, versions in self.registry.subjects.items() for v, i in versions.items() if i == schema_id
            ]
            if parts[2:] == ["versions"]:
                return [{"subject": s, "version": v} for s, v in pairs]
            if parts[2:] == ["subjects"]:
                return sorted({s for s, _ in pairs})
        raise RegistryError(404, 404, "HTTP 404 Not Found")

    def _subjects(self, method: str, parts: list[str], query: dict[str, list[str]], body: dict[str, Any]) -> Any:
        reg = self.registry
        if not parts:
            return sorted(reg.subjects)
        subject = parts[0]
        if len(parts) == 1 and method == "POST":  # look up
            versions = self._versions(subject)
            canonical = reg.canonical(body)
            for version, schema_id in sorted(versions.items()):
                if reg.canonical(self._schema(schema_id)) == canonical:
                    return self._version_json(subject, version)
            raise RegistryError(404, 40403, "Schema not found")
        if len(parts) == 1 and method == "DELETE":
            versions = self._versions(subject)
            del reg.subjects[subject]
            return sorted(versions)
        if parts[1:2] != ["versions"]:
            raise RegistryError(404, 404, "HTTP 404 Not Found")
        if len(parts) == 2 and method == "POST":
            return self._register(subject, body)
        if len(parts) == 2 and method == "GET":
            return sorted(self._versions(subject))
        if len(parts) == 3 and method == "GET":
            versions = self._versions(subject)
            version = max(versions) if parts[2] in ("latest", "-1") else int(parts[2])
            if version not in versions:
                raise RegistryError(404, 40402, f"Version {parts[2]} not found")
            return self._version_json(subject, version)
        raise RegistryError(405, 405, "Method not allowed")

    def _register(self, subject: str, body: dict[str, Any]) -> dict[str, Any]:
        """``POST /subjects/{subject}/versions``: the subject's mode decides whether an explicit ``id`` (and
        ``version``) is taken (``IMPORT``), refused (``READWRITE``, unless the schema already has that id) or every
        registration is refused (``READONLY``)."""
        reg = self.registry
        if "schema" not in body:
            raise RegistryError(422, 42201, "Invalid schema: no schema given")
        mode = reg.mode(subject)
        if mode == "READONLY":
            raise RegistryError(422, 42205, f"Subject {subject} is in read-only mode")
        canonical = reg.canonical(body)
        versions = reg.subjects.get(subject, {})
        explicit = body.get("id")
        wanted_version = int(body.get("version") or 0)
        if mode == "IMPORT":
            if explicit is None:
                raise RegistryError(422, 42205, f"Subject {subject} is not in read-write mode")
            schema_id = int(explicit)
            held = reg.schemas.get(schema_id)
            if held is not None and reg.canonical(held) != canonical:
                raise RegistryError(422, 42205, f"Overwrite new schema with id {schema_id} is not permitted.")
            if wanted_version and versions.get(wanted_version, schema_id) != schema_id:
                raise RegistryError(
                    422,
                    42205,
                    f"Version {wanted_version} of subject {subject} already holds schema id {versions[wanted_version]}",
                )
        else:
            schema_id = reg.ids.get(canonical, 0)
            if explicit is not None and int(explicit) != schema_id:
                raise RegistryError(422, 42205, f"Subject {subject} is not in import mode")
            if wanted_version:
                raise RegistryError(422, 42205, f"Subject {subject} is not in import mode")
            if not schema_id:
                schema_id = max(reg.schemas, default=0) + 1
        if schema_id not in reg.schemas:
            reg.schemas[schema_id] = {
                "schema": body["schema"],
                "schemaType": body.get("schemaType") or "AVRO",
                "references": body.get("references") or [],
            }
            reg.ids.setdefault(canonical, schema_id)
        versions = reg.subjects.setdefault(subject, {})
        existing = [v for v, i in versions.items() if i == schema_id]
        if not existing:
            versions[wanted_version or max(versions, default=0) + 1] = schema_id
        return {"id": schema_id}

    def _versions(self, subject: str) -> dict[int, int]:
        versions = self.registry.subjects.get(subject)
        if versions is None:
            raise RegistryError(404, 40401, f"Subject '{subject}' not found")
        return versions

    def _version_json(self, subject: str, version: int) -> dict[str, Any]:
        schema_id = self.registry.subjects[subject][version]
        return {"subject": subject, "version": version, "id": schema_id, **_schema_json(self._schema(schema_id))}


def _schema_json(stored: dict[str, Any]) -> dict[str, Any]:
    out = {"schema": stored["schema"]}
    if stored["schemaType"] != "AVRO":
        out["schemaType"] = stored["schemaType"]
    if stored["references"]:
        out["references"] = stored["references"]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8081)
    args = parser.parse_args()
    server = SchemaRegistryServer(args.host, args.port)
    print(server.url, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
