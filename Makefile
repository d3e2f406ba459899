# kafka-s3 — every target sets up what it needs (a fresh machine only needs python3, java 17 and make).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell cksum pyproject.toml | cut -d' ' -f1)
PYTEST_ARGS ?=

.PHONY: venv services-up services-down spark-connect demo test test-unit lint lint-selftest docs chaos bench clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(PY) -m pip install --quiet --disable-pip-version-check -e '.[dev,test,lint]'
	rm -f $(VENV)/.installed-* && touch $(STAMP)

venv: $(STAMP)

# The local services, the Spark Connect server and the demo are dev tooling (tools/, outside the wheel), run as
# `python -m tools.<module>` from the repository root.
services-up: venv
	$(PY) -m tools.services up

# The services and a Spark Connect server (sc://127.0.0.1:21502): commands given --remote (or $SPARK_REMOTE from
# .services/env) skip Spark's start-up. services-down stops it too.
spark-connect: venv
	KAFKA_S3_DEV_SPARK_CONNECT=1 $(PY) -m tools.services up

services-down:
	@if [ -x $(PY) ]; then $(PY) -m tools.services down; fi

demo: services-up
	$(PY) -m tools.demo

# Two pytest-xdist workers (a Spark session each), a test module on one worker (its module fixtures made once): most
# of a test's time is waiting on Kafka, S3 or a JVM's start. TEST_WORKERS=0 runs the tests one after the other.
TEST_WORKERS ?= 2
test: venv
	$(PY) -m pytest -n $(TEST_WORKERS) --dist loadfile $(PYTEST_ARGS)

# The gates: lint and formatting (ruff), types (mypy, strict), layers and cycles (import-linter), and the
# whole suite collects (a test importing a module that moved or is gone fails here, without starting any service).
lint: venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports
	@out=$$($(PY) -m pytest --collect-only -q -p no:cacheprovider tests 2>&1) || { printf '%s\n' "$$out" | tail -25; exit 1; }

# Shows that each gate fails on a planted violation (a cycle, core importing pyspark, an unformatted file, a type error).
lint-selftest: venv
	$(PY) -m pytest -q -p no:cacheprovider tests/gates

test-unit: venv
	$(PY) -m pytest tests/unit $(PYTEST_ARGS)

# The generated references: docs/configuration.md from the property definitions, docs/cli.md from the command line's
# parser (a unit test fails when either is stale).
docs: venv
	$(PY) -m kafka_s3.core.config.reference --write docs/configuration.md
	$(PY) -m kafka_s3.cli.reference --write docs/cli.md

# The kill -9 trials (KAFKA_S3_CHAOS_TRIALS each) and KAFKA_S3_CHAOS_SCHEDULES randomized fault schedules
# (tests/chaos/chaos_schedule.py; KAFKA_S3_CHAOS_SEED=<seed> KAFKA_S3_CHAOS_SCHEDULES=1 replays a schedule).
KAFKA_S3_CHAOS_SCHEDULES ?= 50
chaos: venv
	KAFKA_S3_CHAOS_TRIALS=20 KAFKA_S3_CHAOS_SCHEDULES=$(KAFKA_S3_CHAOS_SCHEDULES) $(PY) -m pytest -m chaos tests/chaos $(PYTEST_ARGS)

# bench/run.py starts what it needs itself (Apache Kafka by default: services-up would start noida-db instead).
bench: venv
	@$(PY) -c "import matplotlib, obstore, awscrt" 2>/dev/null || $(PY) -m pip install --quiet --disable-pip-version-check -e '.[bench]'
	@command -v kcat >/dev/null 2>&1 || (apt-get update -qq && apt-get install -y -qq kcat) >/dev/null 2>&1 \
		|| echo "kcat could not be installed: its consume limit is reported as n/a"
	$(PY) bench/run.py $(BENCH_ARGS)

clean: services-down
	rm -rf .services bench/results/*.tmp
