"""Helpers of the test suite, imported by their package path (``from tests.support.restore import read_topic``):
services' fault proxy and HTTPS store, CLI runs, reading topics and buckets back, format and partitioner builders."""
