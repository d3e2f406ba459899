"""``kafka-s3 server start|stop|status``: the user's Spark server, which plain commands run their jobs on."""

from __future__ import annotations

import argparse
import datetime as dt
import json
import time

from kafka_s3 import api


def cmd_server_status(args: argparse.Namespace) -> int:
    state = api.server_status()
    if args.json:
        print(json.dumps(_document(state), indent=2))
    elif state is None:
        print("no Spark server is running (the next command without --master or --remote starts one)")
    else:
        print(render_server(state))
    return 0


def cmd_server_start(args: argparse.Namespace) -> int:
    began = time.monotonic()
    started = api.server_start()
    if started.started:
        print(f"started the Spark server in {time.monotonic() - began:.1f}s")
    else:
        print("the Spark server was running already")
    print(render_server(started.server))
    return 0


def cmd_server_stop(args: argparse.Namespace) -> int:
    state = api.server_stop()
    if state is None:
        print("no Spark server was running")
    else:
        print(f"stopped the Spark server {state.url} (pid {state.pid}, up {_duration(time.time() - state.started)})")
    return 0


def render_server(state: api.ServerState) -> str:
    """Where the server runs, since when, its log, its version, when it stops itself."""
    rows = [
        ("Spark server", f"{state.url} (pid {state.pid}){'' if state.ready else ', starting'}"),
        ("since", f"{_when(state.started)} ({_duration(time.time() - state.started)} ago)"),
        ("log", state.log),
        ("version", state.identity.version),
        ("idle timeout", f"{_duration(state.idle_timeout_s)} (it stops itself after that long without a command)"),
    ]
    if state.identity.settings:
        rows.append(("settings", ", ".join(sorted(state.identity.settings))))
    width = max(len(name) for name, _ in rows) + 1
    return "\n".join(f"{name + ':':<{width}} {value}" for name, value in rows)


def _document(state: api.ServerState | None) -> dict[str, object]:
    if state is None:
        return {"running": False}
    return {
        "running": True,
        "ready": state.ready,
        "url": state.url,
        "pid": state.pid,
        "started": _when(state.started),
        "log": state.log,
        "version": state.identity.version,
        "idle_timeout_s": state.idle_timeout_s,
        "settings": sorted(state.identity.settings),
    }


def _when(epoch: float) -> str:
    return dt.datetime.fromtimestamp(epoch, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f}s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
