"""``kafka-s3``: the command line. User errors print one line and a non-zero exit code (tracebacks with --debug)."""

from __future__ import annotations

import logging
import os
import sys
import traceback
from collections.abc import Sequence

from kafka_s3.cli.parser import build_parser
from kafka_s3.core import logs
from kafka_s3.core.errors import KafkaS3Error

log = logging.getLogger("kafka_s3.cli")


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    # Nothing the command prints may carry a secret (a record printed by `read` is the user's data: left as is).
    if not isinstance(sys.stderr, logs.RedactingStream):
        sys.stderr = logs.RedactingStream(sys.stderr)
    if args.command != "read" and not isinstance(sys.stdout, logs.RedactingStream):
        sys.stdout = logs.RedactingStream(sys.stdout)
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
        if args.debug:  # the trace, then the same line and exit code as without --debug (docs/operations.md's table)
            traceback.print_exc()
        print(f"kafka-s3: error: {logs.redact(str(exc))}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("kafka-s3: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # a failure that is not the project's own verdict: its kind and message, on one line
        if args.debug:
            traceback.print_exc()
        first = str(exc).strip().splitlines()[0][:500] if str(exc).strip() else ""
        said = f"{type(exc).__name__}: {first}" if first else type(exc).__name__
        print(f"kafka-s3: error: {logs.redact(said)} (--debug shows the trace)", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
