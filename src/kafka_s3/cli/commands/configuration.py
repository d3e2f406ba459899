"""``kafka-s3 config show|validate`` and ``kafka-s3 bucket create``."""

from __future__ import annotations

import argparse
import json

from kafka_s3 import api
from kafka_s3.cli.commands.options import overrides
from kafka_s3.cli.commands.restore import label


def cmd_config_show(args: argparse.Namespace) -> int:
    configs = api.configurations(args.config, args.connector, overrides(args))
    if args.json:
        shown = [
            {k: ({"value": v, "default": is_default} if args.defaults else v) for k, v, is_default in config.as_rows()}
            for config in configs
        ]
        print(json.dumps(shown[0] if len(shown) == 1 else shown, indent=2))
        return 0
    for number, config in enumerate(configs, 1):
        rows = config.as_rows()
        if len(configs) > 1:
            print(f"{'' if number == 1 else chr(10)}# statement {number}: {label(config)}")
        width = max(len(k) for k, _, _ in rows)
        for key, value, is_default in rows:
            print(f"{key:<{width}}  {value}{'  (default)' if is_default else ''}")
    return 0


def cmd_config_validate(args: argparse.Namespace) -> int:
    checked = api.validate(args.config, side=args.connector, overrides=overrides(args))
    warnings = len(checked.warnings)
    statements = f", {len(checked.configs)} KCQL statements" if len(checked.configs) > 1 else ""
    also = ", and as a restore's (source)" if checked.also else ""
    print(
        f"{args.config}: valid {checked.configs[0].definition.name} configuration{also}{statements}"
        + (f" ({warnings} warning{'s' if warnings != 1 else ''})" if warnings else "")
    )
    return 0


def cmd_bucket_create(args: argparse.Namespace) -> int:
    made = api.create_bucket(args.name, config=args.config, overrides=overrides(args))
    if made.created:
        print(f"created bucket {args.name} at {made.url}")
    else:
        print(f"bucket {args.name} already exists at {made.url}: nothing to do")
    return 0
