"""The CLI's commands: each parses nothing (:mod:`kafka_s3.cli.parser` did), calls :mod:`kafka_s3.api` and renders
what it returned; its return value is the exit code."""
