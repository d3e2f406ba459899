"""A scriptable HTTP reverse proxy in front of the S3 server, to inject faults and see what the client sent.

Rules match requests by method, path regular expression and a substring of the query (e.g. ``uploadId``) and, for
the next ``times`` matches, answer an S3 XML error, reset the connection, delay before forwarding, or turn the
server's 412 (a refused conditional write) into a 200, as a store that ignores ``If-None-Match`` would answer. Every
request is recorded (method, path, query, headers, start and end times). The Host header is forwarded unchanged, so
SigV4 signatures made for the proxy's address stay valid upstream.
"""

from __future__ import annotations

import http.client
import re
import socket
import ssl
import struct
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlparse

HOP_BY_HOP = frozenset(
    {"connection", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding", "upgrade", "expect"}
)
WRITTEN_BY_US = frozenset({"content-length", "date", "server"})  # set by send_response or recomputed
DEFAULT_CODES = {403: "AccessDenied", 500: "InternalError", 503: "SlowDown"}


@dataclass
class Rule:
    action: str  # "status", "reset", "delay" or "ignore_condition"
    times: int
    method: str | None = None
    path: str | None = None  # regular expression searched in the path
    query: str | None = None  # substring of the raw query string
    status: int = 503
    code: str = ""
    seconds: float = 0.0

    def matches(self, method: str, path: str, query: str) -> bool:
        return (
            self.times > 0
            and (self.method is None or self.method == method)
            and (self.path is None or re.search(self.path, path) is not None)
            and (self.query is None or self.query in query)
        )


@dataclass(frozen=True)
class SeenRequest:
    method: str
    path: str
    query: str
    headers: dict[str, str]  # lower-case names
    started: float  # time.monotonic()
    finished: float
    fault: str | None  # the action applied, if any
    status: int | None = None  # the upstream server's answer, when the request was forwarded


class FaultProxy:
    """Start with ``with FaultProxy(upstream) as proxy:``; point the client at ``proxy.url``."""

    def __init__(self, upstream: str, ca_bundle: str | None = None):
        """``upstream``: http:// or https:// (verified against ``ca_bundle``, or the system's CAs)."""
        parsed = urlparse(upstream)
        self._tls = ssl.create_default_context(cafile=ca_bundle) if parsed.scheme == "https" else None
        self._upstream = (parsed.hostname or "127.0.0.1", parsed.port or (443 if self._tls else 80))
        self._rules: list[Rule] = []
        self._seen: list[SeenRequest] = []
        self._lock = threading.Lock()
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.proxy = self
        self._thread = threading.Thread(target=self._server.serve_forever, name="fault-proxy", daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> FaultProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    # ------------------------------------------------------------------------------------------------ scripting
    def fail(self, status: int, times: int, *, code: str = "", **match: str) -> None:
        """Answer ``status`` with an S3 XML error for the next ``times`` matching requests."""
        self._add(Rule("status", times, status=status, code=code or DEFAULT_CODES.get(status, "Error"), **match))

    def reset(self, times: int, **match: str) -> None:
        """Read the next ``times`` matching requests whole, then reset the connection (TCP RST) without answering."""
        self._add(Rule("reset", times, **match))

    def delay(self, seconds: float, times: int, **match: str) -> None:
        """Hold the next ``times`` matching requests for ``seconds`` before forwarding them."""
        self._add(Rule("delay", times, seconds=seconds, **match))

    def ignore_condition(self, times: int, **match: str) -> None:
        """Forward the next ``times`` matching requests; where the server refuses one with 412 (a conditional write
        on an existing key), answer 200 instead, as a store that ignores ``If-None-Match: *`` does."""
        self._add(Rule("ignore_condition", times, **match))

    def clear(self) -> None:
        """Drop every pending fault: from now on requests pass through."""
        with self._lock:
            self._rules.clear()

    def _add(self, rule: Rule) -> None:
        with self._lock:
            self._rules.append(rule)

    def requests(
        self, method: str | None = None, path: str | None = None, query: str | None = None
    ) -> list[SeenRequest]:
        """Recorded requests matching the filters, in arrival order."""
        probe = Rule("filter", 1, method=method, path=path, query=query)
        with self._lock:
            return [r for r in self._seen if probe.matches(r.method, r.path, r.query)]

    # ----------------------------------------------------------------------------------------------- internals
    def _take_rule(self, method: str, path: str, query: str) -> Rule | None:
        with self._lock:
            for rule in self._rules:
                if rule.matches(method, path, query):
                    rule.times -= 1
                    return rule
        return None

    def _record(self, request: SeenRequest) -> None:
        with self._lock:
            self._seen.append(request)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    proxy: FaultProxy

    def __init__(self, *args: object):
        super().__init__(*args)
        self.resets: set[socket.socket] = set()

    def shutdown_request(self, request: socket.socket) -> None:  # type: ignore[override]
        if request in self.resets:
            self.resets.discard(request)
            self.close_request(request)  # SO_LINGER 0: close sends RST, not FIN
        else:
            super().shutdown_request(request)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: object) -> None:
        pass

    def _handle(self) -> None:
        proxy = self.server.proxy
        path, _, query = self.path.partition("?")
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        started = time.monotonic()
        rule = proxy._take_rule(self.command, path, query)
        if rule is not None and rule.action == "delay":
            time.sleep(rule.seconds)
        forwarded = rule is None or rule.action in ("delay", "ignore_condition")
        answer = self._ask_upstream(body) if forwarded else None
        # recorded before answering, so a client that got its answer always finds its request recorded
        headers = {name.lower(): value for name, value in self.headers.items()}
        fault = rule.action if rule is not None else None
        status = answer[0].status if answer is not None else None
        proxy._record(SeenRequest(self.command, path, query, headers, started, time.monotonic(), fault, status))
        if answer is not None and rule is not None and rule.action == "ignore_condition" and answer[0].status == 412:
            self.send_response(200)
            self.send_header("ETag", '"ignored-condition"')
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif answer is not None:
            self._relay(*answer)
        elif rule is not None and rule.action == "reset":
            self.request.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.server.resets.add(self.request)
            self.close_connection = True
        elif rule is not None:
            self._send_error_xml(rule, path)

    do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = _handle

    def _send_error_xml(self, rule: Rule, path: str) -> None:
        payload = (
            '<?xml version="1.0" encoding="UTF-8"?>\n'
            f"<Error><Code>{rule.code}</Code><Message>injected by the fault proxy</Message>"
            f"<Resource>{path}</Resource><RequestId>fault-proxy</RequestId></Error>"
        ).encode()
        self.send_response(rule.status)
        self.send_header("Content-Type", "application/xml")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(payload)

    def _ask_upstream(self, body: bytes) -> tuple[http.client.HTTPResponse, bytes]:
        proxy = self.server.proxy
        upstream = (
            http.client.HTTPSConnection(*proxy._upstream, timeout=120, context=proxy._tls)
            if proxy._tls
            else http.client.HTTPConnection(*proxy._upstream, timeout=120)
        )
        try:
            upstream.putrequest(self.command, self.path, skip_host=True, skip_accept_encoding=True)
            for name, value in self.headers.items():
                if name.lower() not in HOP_BY_HOP:
                    upstream.putheader(name, value)
            upstream.endheaders(body or None)
            response = upstream.getresponse()
            return response, response.read()
        finally:
            upstream.close()

    def _relay(self, response: http.client.HTTPResponse, payload: bytes) -> None:
        self.send_response(response.status, response.reason)
        for name, value in response.getheaders():
            if name.lower() not in HOP_BY_HOP | WRITTEN_BY_US:
                self.send_header(name, value)
        # a HEAD answer carries the object's length without its bytes
        length = response.getheader("Content-Length") if self.command == "HEAD" else str(len(payload))
        self.send_header("Content-Length", length or "0")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(payload)
