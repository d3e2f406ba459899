"""Issue 30 item 2: what ``kafka-s3 server status`` prints of the user's Spark server: where it runs, since when, its
log file, its version and idle timeout (text and ``--json``), and the subcommands the parser takes."""

from __future__ import annotations

import json
import time

import pytest

from kafka_s3.cli.commands.server import _document, render_server
from kafka_s3.cli.parser import build_parser
from kafka_s3.spark.server_state import ServerIdentity, ServerState

pytestmark = pytest.mark.issue(30, item=2)

STATE = ServerState(
    pid=4154,
    port=44461,
    started=time.time() - 300,
    identity=ServerIdentity(
        "kafka-s3 0.1.0 (code 204a4991565f), pyspark 4.3.0, Python /v/bin/python", {"spark.x": "1"}
    ),
    log="/s/server.log",
    idle_timeout_s=1800,
    ready=True,
)


def test_status_says_where_the_server_runs_since_when_its_log_its_version_and_when_it_stops_itself():
    lines = render_server(STATE.with_(started=time.time() - 300)).splitlines()
    assert lines[0] == "Spark server: sc://127.0.0.1:44461 (pid 4154)"
    assert lines[1].startswith("since:        ") and lines[1].endswith("(5 min ago)")
    assert lines[2:5] == [
        "log:          /s/server.log",
        "version:      kafka-s3 0.1.0 (code 204a4991565f), pyspark 4.3.0, Python /v/bin/python",
        "idle timeout: 30 min (it stops itself after that long without a command)",
    ]
    assert lines[5] == "settings:     spark.x"  # names only: a spark.* value may be a secret
    assert "starting" in render_server(STATE.with_(ready=False)).splitlines()[0]


def test_status_json_has_the_same_and_running_false_without_a_server():
    doc = json.loads(json.dumps(_document(STATE)))
    assert {k: doc[k] for k in ("running", "ready", "url", "pid", "log", "idle_timeout_s", "settings")} == {
        "running": True,
        "ready": True,
        "url": "sc://127.0.0.1:44461",
        "pid": 4154,
        "log": "/s/server.log",
        "idle_timeout_s": 1800,
        "settings": ["spark.x"],
    }
    assert doc["started"].endswith("Z") and doc["version"].startswith("kafka-s3 0.1.0")
    assert _document(None) == {"running": False}


@pytest.mark.parametrize("action", ["start", "stop", "status"])
def test_the_server_command_takes_start_stop_and_status(action):
    args = build_parser().parse_args(["server", action])
    assert args.server_command == action and callable(args.func)
