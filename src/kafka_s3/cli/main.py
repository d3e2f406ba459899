"""``kafka-s3``: the command line. User errors print one line and a non-zero exit code (tracebacks with --debug)."""

from __future__ import annotations

import logging
import os
import sys
import traceback
from collections.abc import Sequence

from kafka_s3.cli import json_stderr
from kafka_s3.cli.parser import build_parser
from kafka_s3.core import logs
from kafka_s3.core.errors import KafkaS3Error

log = logging.getLogger("kafka_s3.cli")


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    if json_stderr.asked_for(arguments):
        json_stderr.start()
    try:
        return _run(arguments)
    finally:
        json_stderr.flush()  # in JSON mode, what the JVM and its workers printed last is out before the exit code


def _run(arguments: list[str]) -> int:
    args = build_parser().parse_args(arguments)
    # Nothing the command prints may carry a secret (a record printed by `read` is the user's data: left as is).
    if not isinstance(sys.stderr, logs.RedactingStream):
        sys.stderr = logs.RedactingStream(sys.stderr)
    if args.command != "read" and not isinstance(sys.stdout, logs.RedactingStream):
        sys.stdout = logs.RedactingStream(sys.stdout)
    if args.log_format == "json":  # (started already unless asked for with an abbreviation: --log-f json)
        json_stderr.start()
    logs.setup(verbose=not args.quiet, debug=args.debug, fmt=args.log_format)
    if args.quiet:
        logging.getLogger("kafka_s3").setLevel(logging.WARNING)
    try:
        code: int = args.func(args)  # one of the cmd_* functions
        return code
    except BrokenPipeError:  # the reader of the output went away (`read | head`): what is left is nobody's business
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.__stdout__.fileno() if sys.__stdout__ else 1)
        return 0
    except KafkaS3Error as exc:
        # --debug: the trace too, with the same line and exit code as without it (docs/operations.md's table)
        return _failed(str(exc), exc.exit_code, args.log_format, args.debug)
    except KeyboardInterrupt:
        return _failed("interrupted", 130, args.log_format)
    except Exception as exc:  # a failure that is not the project's own verdict: its kind and message, on one line
        first = str(exc).strip().splitlines()[0][:500] if str(exc).strip() else ""
        said = f"{type(exc).__name__}: {first}" if first else type(exc).__name__
        return _failed(f"{said} (--debug shows the trace)", 1, args.log_format, args.debug)


def _failed(message: str, exit_code: int, log_format: str, trace: bool = False) -> int:
    """The one line a failed command ends with (``kafka-s3: error: ...``, or a JSON record with its exit code);
    with ``trace``, the exception's trace before it (in the record's ``trace`` field in JSON)."""
    if log_format == "json":
        fields = {"exit_code": exit_code, **({"trace": traceback.format_exc()} if trace else {})}
        print(logs.json_record("ERROR", "kafka_s3.cli", message, **fields), file=sys.stderr)
        return exit_code
    if trace:
        traceback.print_exc()
    if exit_code == 130:
        print(f"kafka-s3: {message}", file=sys.stderr)
    else:
        print(f"kafka-s3: error: {logs.redact(message)}", file=sys.stderr)
    return exit_code


if __name__ == "__main__":
    sys.exit(main())
