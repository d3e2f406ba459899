"""Issue 28 item 5, as a user sees it: ``kafka-s3 config validate`` runs every check a command would run on the file
(a backup's file doubles as the restore's, so both sides), and a Connect REST JSON file that is not an object is
refused saying so. The real command in a subprocess; no service is needed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.unit.cli.test_config_command import assert_clean, props, run_cli, write


def one_error(stderr: str) -> str:
    errors = [line for line in stderr.splitlines() if line.startswith("kafka-s3: error")]
    assert len(errors) == 1, stderr
    return errors[0]


@pytest.mark.issue(28, item=5)
@pytest.mark.parametrize(
    ("key", "value", "said"),
    [
        ("topic.rename", "orders-restored", "expected source:target pairs"),
        ("exactly.once.support", "bogus", "must be one of required, requested, disabled"),
    ],
)
def test_config_validate_rejects_what_restore_rejects_in_a_backups_file(tmp_path, key, value, said):
    """A backup's file is a restore's too (README's example): a value ``restore --dry-run`` refuses is refused by
    ``config validate`` as well (it passed: only the backup's side was checked)."""
    path = write(tmp_path, props(**{key: value}))
    result = run_cli(["config", "validate", "-c", path])
    assert result.returncode == 2, result.stdout + result.stderr
    assert_clean(result)
    error = one_error(result.stderr)
    assert key in error and said in error, error
    assert "valid" not in result.stdout, result.stdout


@pytest.mark.issue(28, item=5)
def test_config_validate_says_a_backups_file_serves_the_restore_too(tmp_path):
    result = run_cli(["config", "validate", "-c", write(tmp_path, props(**{"topic.rename": "t:t2"}))])
    assert result.returncode == 0, result.stderr
    assert "valid backup (sink) configuration, and as a restore's (source)" in result.stdout, result.stdout


@pytest.mark.issue(28, item=5)
def test_config_validate_with_a_forced_side_checks_only_that_side(tmp_path):
    """``--connector sink`` asks about the backup alone: a restore-only mistake is not its business."""
    path = write(tmp_path, props(**{"topic.rename": "orders-restored"}))
    result = run_cli(["config", "validate", "-c", path, "--connector", "sink"])
    assert result.returncode == 0, result.stderr
    assert "valid backup (sink) configuration" in result.stdout and "restore" not in result.stdout, result.stdout


@pytest.mark.issue(28, item=5)
@pytest.mark.parametrize(
    ("content", "said"),
    [
        ([{"name": "orders-backup", "config": {"topics": "orders"}}], "a JSON list"),
        ("orders-backup", "a JSON string"),
    ],
)
def test_a_rest_json_file_that_is_not_an_object_is_refused_saying_so(tmp_path: Path, content, said):
    """It said ``Missing required configuration "name"``: the list was read as a .properties file."""
    path = tmp_path / "connector.json"
    path.write_text(json.dumps(content), encoding="utf-8")
    for command in (["config", "validate"], ["config", "show"]):
        result = run_cli([*command, "-c", str(path)])
        assert result.returncode == 2, (command, result.stdout + result.stderr)
        assert_clean(result)
        error = one_error(result.stderr)
        assert "connector.json" in error and "must be a JSON object" in error and said in error, error
        assert "Missing required configuration" not in error, error
