"""The memory budget reads what the machine and its cgroup leave (brain/memory_budget.py)."""

from __future__ import annotations

from pathlib import Path

from brain.memory_budget import MemoryBudget, cgroup_room_mib, meminfo_mib

MEMINFO = """MemTotal:       24576000 kB
MemFree:         1000000 kB
MemAvailable:    2097152 kB
"""


def test_meminfo_fields_are_read_in_mib(tmp_path: Path) -> None:
    path = tmp_path / "meminfo"
    path.write_text(MEMINFO)
    assert meminfo_mib("MemAvailable", path) == 2048
    assert meminfo_mib("MemTotal", path) == 24000
    assert meminfo_mib("Nonsense", path) is None
    assert meminfo_mib("MemTotal", tmp_path / "missing") is None


def test_this_machine_says_what_is_available() -> None:
    available = MemoryBudget(0).available_mib()
    assert available is not None and available > 0
    assert cgroup_room_mib() is None or cgroup_room_mib() >= 0


def test_the_budget_is_exhausted_below_the_reserve_only() -> None:
    available = MemoryBudget(0).available_mib()
    assert available is not None
    assert not MemoryBudget(0).exhausted(), "a reserve of 0 never refuses"
    assert MemoryBudget(available * 4 + 1024).exhausted()
    assert "MiB reserved" in MemoryBudget(available * 4 + 1024).refusal_message()


def test_the_default_reserve_is_a_twentieth_of_the_machine_at_least_256_mib() -> None:
    budget = MemoryBudget(None)
    total = meminfo_mib("MemTotal")
    assert total is not None
    assert budget.reserve_mib == max(256, total // 20)
