"""Kept for imports written before the helpers moved up to ``tests/integration/integration_helpers.py``."""

from integration_helpers import QUICKSTART_SCHEMA, list_keys, quickstart_values  # noqa: F401
