"""The backup integration tests' fixtures (``make_config``, ``produce``) live in ``tests/integration/conftest.py``,
shared with the restore tests."""
