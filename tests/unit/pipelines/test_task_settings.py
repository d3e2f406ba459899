"""A job's tasks receive one typed configuration, parsed on the driver: they build their plugins from it, once per
worker, and never parse properties again."""

from __future__ import annotations

import pickle

import pytest

from kafka_s3.core.config.model import ConfigDef
from kafka_s3.core.config.source import SOURCE
from kafka_s3.io.stores.spec import StoreSpec
from kafka_s3.pipelines.task_settings import TaskSettings
from kafka_s3.runtime import worker_cache

pytestmark = pytest.mark.issue(27)


def _settings(tmp_path, **settings: str) -> TaskSettings:
    raw = {"name": "r", "store.url": f"file://{tmp_path}", "s3.bucket.name": "b", "topics": "t", "format.class": "json"}
    config = SOURCE.parse({**raw, **settings})
    return TaskSettings(config, StoreSpec.from_config(config))


def test_a_task_builds_its_plugins_without_parsing_properties(tmp_path, monkeypatch):
    shipped = pickle.dumps(_settings(tmp_path))

    def no_parsing(*args, **kwargs):
        raise AssertionError("a task parsed properties")

    monkeypatch.setattr(ConfigDef, "parse", no_parsing)
    monkeypatch.setattr(worker_cache, "_CACHE", {})
    settings = pickle.loads(shipped)
    built = []
    assert settings.plugins("probe", lambda config: built.append(config["topics"]) or len(built)) == 1
    assert built == [["t"]]


def test_plugins_are_built_once_per_worker_and_configuration(tmp_path, monkeypatch):
    monkeypatch.setattr(worker_cache, "_CACHE", {})
    built = []

    def build(config):
        built.append(config["behavior.on.error"])
        return object()

    first = _settings(tmp_path)
    assert pickle.loads(pickle.dumps(first)).plugins("probe", build) is first.plugins("probe", build)
    other = _settings(tmp_path, **{"behavior.on.error": "ignore"})
    assert other.plugins("probe", build) is not first.plugins("probe", build)
    assert built == ["fail", "ignore"]
