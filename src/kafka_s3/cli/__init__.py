"""The ``kafka-s3`` command line: argument parsing, progress bars, summaries and exit codes."""

from kafka_s3.cli.main import main

__all__ = ["main"]
