"""Which restore holds a target topic: the order of claims in the lease partition, liveness, release (issue 26)."""

from __future__ import annotations

import dataclasses

from kafka_s3.core.leases import TTL_MS, Claim, Heard, rivals


def claim(run: str, *targets: str, released: bool = False) -> Claim:
    return Claim(run, f"restore-{run}", "s3://b/topics", tuple(targets), "host", 100, started=1, released=released)


def test_the_earlier_claim_of_a_topic_wins_whatever_the_claims_times():
    heard = [Heard(10, 5_000, claim("a", "t")), Heard(11, 4_000, claim("b", "t"))]
    [rival] = rivals(heard, "b", {"t": 11}, 5_000)
    assert (rival.target, rival.claim.run) == ("t", "a")
    assert rivals(heard, "a", {"t": 10}, 5_000) == []


def test_claims_of_other_topics_do_not_conflict():
    heard = [Heard(10, 5_000, claim("a", "t1")), Heard(11, 5_000, claim("b", "t2"))]
    assert rivals(heard, "b", {"t2": 11}, 5_000) == []


def test_a_released_claim_or_one_not_renewed_within_the_ttl_holds_nothing():
    released = [Heard(10, 5_000, claim("a", "t")), Heard(12, 6_000, claim("a", "t", released=True))]
    assert rivals(released + [Heard(13, 6_000, claim("b", "t"))], "b", {"t": 13}, 6_000) == []
    stale = [Heard(10, 5_000, claim("a", "t")), Heard(13, 5_000 + TTL_MS + 1, claim("b", "t"))]
    assert rivals(stale, "b", {"t": 13}, 5_000 + TTL_MS + 1) == []
    renewed = [Heard(10, 5_000, claim("a", "t")), Heard(12, 5_000 + TTL_MS, claim("a", "t"))]
    assert [r.heard for r in rivals(renewed + [Heard(13, 0, claim("b", "t"))], "b", {"t": 13}, 5_000 + TTL_MS)] == [
        5_000 + TTL_MS
    ]


def test_a_claim_whose_process_is_known_to_be_gone_holds_nothing():
    heard = [Heard(10, 5_000, claim("a", "t")), Heard(11, 5_000, claim("b", "t"))]
    assert rivals(heard, "b", {"t": 11}, 5_000, dead=lambda c: c.run == "a") == []


def test_a_run_extending_its_claim_later_yields_the_new_topic_to_an_earlier_claim():
    heard = [
        Heard(10, 5_000, claim("a", "t1")),
        Heard(11, 5_000, claim("b", "t2")),
        Heard(12, 5_000, claim("a", "t1", "t2")),
    ]
    assert rivals(heard, "b", {"t2": 11}, 5_000) == []
    [rival] = rivals(heard, "a", {"t1": 10, "t2": 12}, 5_000)
    assert (rival.target, rival.claim.run) == ("t2", "b")


def test_claims_round_trip_and_other_records_are_not_claims():
    one = dataclasses.replace(claim("a", "t1", "t2"), boot="boot", process_start="42")
    assert Claim.from_bytes(one.to_bytes()) == one
    assert Claim.from_bytes(b"garbage") is None and Claim.from_bytes(None) is None and Claim.from_bytes(b"{}") is None
    assert "restore 'restore-a'" in one.describe(5_000, 8_000) and "last heard 3 s ago" in one.describe(5_000, 8_000)
