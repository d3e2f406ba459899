"""Where a restore resumes from: only its own progress, on a target that still holds what it produced."""

from __future__ import annotations

import dataclasses

import pytest

from kafka_s3.pipelines.restore.progress import ProgressIdentity, Start, decide, run_of

ME = ProgressIdentity("s3://b/topics", "orders", 0, "cluster-1", "orders-copy", "id-1", 0, "Bounds()")


def test_identity_round_trips_through_offset_metadata():
    assert ProgressIdentity.from_metadata(ME.to_metadata()) == ME
    assert ProgressIdentity.from_metadata("") is None and ProgressIdentity.from_metadata('{"object": "x"}') is None


def test_no_progress_starts_fresh_and_own_progress_resumes():
    assert decide(ME, None, "", 0, False).start is Start.FRESH
    assert decide(ME, 5, ME.to_metadata(), 5, False) == decide(ME, 5, "", 5, False)  # legacy progress resumes too
    assert decide(ME, 5, ME.to_metadata(), 5, False).start is Start.RESUME


def test_own_progress_on_an_empty_target_starts_fresh():
    decision = decide(ME, 5, ME.to_metadata(), 0, False)
    assert decision.start is Start.FRESH and not decision.refused and "empty" in decision.reason


@pytest.mark.parametrize(
    ("change", "word"),
    [
        ({"target_topic_id": "id-2"}, "target topic id"),
        ({"bounds": "other"}, "bounds"),
        ({"source": "s3://c"}, "source"),
    ],
)
def test_another_restores_progress(change, word):
    theirs = dataclasses.replace(ME, **change).to_metadata()
    assert decide(ME, 5, theirs, 0, False).start is Start.FRESH  # empty target: fresh
    refused = decide(ME, 5, theirs, 7, False)
    assert refused.refused and word in refused.reason and "--restart" in refused.reason
    assert decide(ME, 5, theirs, 7, True).start is Start.FRESH


def test_ids_the_broker_does_not_give_are_not_compared():
    theirs = dataclasses.replace(ME, cluster="", target_topic_id="").to_metadata()
    assert decide(ME, 5, theirs, 5, False).start is Start.RESUME


def test_the_run_rides_along_in_the_metadata_without_changing_the_identity():
    metadata = ME.to_metadata("run-1")
    assert ProgressIdentity.from_metadata(metadata) == ME and run_of(metadata) == "run-1"
    assert run_of(ME.to_metadata()) == "" and run_of("not json") == ""


def test_restart_resumes_its_own_runs_progress_and_restarts_anyone_elses():
    """A task of a --restart run that runs again (Spark re-running it) must not start over a second time."""
    assert decide(ME, 5, ME.to_metadata("run-1"), 5, True, run="run-1").start is Start.RESUME
    assert decide(ME, 5, ME.to_metadata("run-0"), 5, True, run="run-1").start is Start.FRESH


def test_a_target_holding_records_no_progress_accounts_for_is_refused_unless_appending():
    refused = decide(ME, None, "", 50, False, target_has_records=True)
    assert refused.refused and "already holds records" in refused.reason and "--append" in refused.reason
    appending = decide(ME, None, "", 50, False, append=True, target_has_records=True)
    assert appending.start is Start.FRESH and not appending.refused
    # offsets left by aborted transactions only (a killed exactly-once run): nothing a reader sees, nothing refused
    assert decide(ME, None, "", 50, False, target_has_records=False) == decide(ME, None, "", 0, False)
