"""MemberRegistries: another member's registry address, remembered per boot, looked up with a
bounded wait (brain/web/member_registries.py). The lookup here is a plain function standing for
Thespian's createActor, which blocks for as long as a partition lasts."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from brain.actors.roster import record_members, recorded_members
from brain.web.member_registries import MemberNotReached, MemberRegistries


class SlowLookup:
    """Answers each lookup once `release` is set; counts how many were started."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.started = 0
        self.answer: object = "registry@b#1"

    def __call__(self, name: str) -> object:
        self.started += 1
        assert self.release.wait(10)
        return self.answer


def test_a_lookup_that_hangs_is_given_up_on_in_time_and_only_one_runs() -> None:
    lookup = SlowLookup()
    registries = MemberRegistries(lookup)
    start = time.monotonic()
    for _ in range(3):
        with pytest.raises(MemberNotReached):
            registries.address("b", "boot-1", wait=0.2)
    assert time.monotonic() - start < 2.0
    assert lookup.started == 1  # a partition does not pile up lookups
    lookup.release.set()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:  # the late answer is kept for the next create
        try:
            assert registries.address("b", "boot-1", wait=0.2) == "registry@b#1"
            break
        except MemberNotReached:
            time.sleep(0.05)
    else:
        pytest.fail("the late answer was not kept")
    assert registries.address("b", "boot-1", wait=0.2) == "registry@b#1"
    assert lookup.started == 1


def test_a_restarted_member_or_a_refused_address_is_looked_up_again() -> None:
    lookup = SlowLookup()
    lookup.release.set()
    registries = MemberRegistries(lookup)
    assert registries.address("b", "boot-1") == "registry@b#1"
    lookup.answer = "registry@b#2"
    assert registries.address("b", "boot-2") == "registry@b#2"  # another boot identity
    assert lookup.started == 2
    registries.forget("b", "registry@b#1")  # not the one held: nothing happens
    assert registries.address("b", "boot-2") == "registry@b#2" and lookup.started == 2
    registries.forget("b", "registry@b#2")
    lookup.answer = "registry@b#3"
    assert registries.address("b", "boot-2") == "registry@b#3" and lookup.started == 3


def test_a_member_thespian_does_not_know_is_not_reached() -> None:
    registries = MemberRegistries(lambda name: None)
    with pytest.raises(MemberNotReached) as raised:
        registries.address("nobody", None)
    assert (raised.value.status, raised.value.code) == (503, "unavailable")


def test_the_leader_records_one_address_per_member(tmp_path: Path) -> None:
    record = tmp_path / "run" / "convention.json"
    record_members(record, {"b": {"admin_host_port": "10.0.0.2:40001"},
                            "a": {"self": True}})
    record_members(record, {"b": {"admin_host_port": "10.0.0.2:40002"},
                            "c": {"admin_host_port": "10.0.0.3:7001"}})
    assert recorded_members(record) == {"b": "10.0.0.2:40002", "c": "10.0.0.3:7001"}
    record.write_text('["10.0.0.2:40001", "10.0.0.3:7001"]\n')  # written by an older Brain
    assert sorted(recorded_members(record).values()) == ["10.0.0.2:40001", "10.0.0.3:7001"]
    record_members(record, {"b": {"admin_host_port": "10.0.0.2:40003"}})
    assert recorded_members(record) == {"b": "10.0.0.2:40003"}
