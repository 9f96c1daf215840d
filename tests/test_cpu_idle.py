"""The CPU rule for forking actors for the backlog (brain/cpu_idle.py)."""

from __future__ import annotations

from pathlib import Path

from brain.cpu_idle import CpuIdle, cpu_actors, may_fork_for_backlog, read_ticks


def stat_file(path: Path, idle: int, busy: int) -> Path:
    path.write_text(f"cpu  {busy} 0 0 {idle} 0 0 0 0 0 0\ncpu0 1 2 3 4 5 6 7 8 9 10\n")
    return path


def test_ticks_are_read_from_the_first_line(tmp_path: Path) -> None:
    assert read_ticks(stat_file(tmp_path / "stat", 300, 100)) == (300, 400)
    assert read_ticks(tmp_path / "missing") is None
    real = read_ticks()
    assert real is not None and real[1] >= real[0] > 0


def test_the_idle_share_is_taken_between_two_readings(tmp_path: Path, monkeypatch) -> None:
    path = stat_file(tmp_path / "stat", 1000, 1000)
    clock = [100.0]
    monkeypatch.setattr("brain.cpu_idle.time.monotonic", lambda: clock[0])
    cpu = CpuIdle(path)
    stat_file(path, 1010, 1090)  # 10 idle ticks of 100: busy
    clock[0] += 0.2
    assert abs(cpu.share() - 0.10) < 1e-9 and not cpu.has_room()
    stat_file(path, 1070, 1130)  # 60 idle of 100: room
    assert not cpu.has_room(), "within MIN_INTERVAL_SECS the last reading stands"
    clock[0] += 0.2
    assert cpu.has_room()


def test_forks_are_free_below_the_cpu_bound_and_need_an_idle_cpu_past_it() -> None:
    assert may_fork_for_backlog(3, 64, 8, cpu_has_room=False)
    assert not may_fork_for_backlog(8, 64, 8, cpu_has_room=False)
    assert may_fork_for_backlog(8, 64, 8, cpu_has_room=True), "resident sessions hold actors"
    assert not may_fork_for_backlog(64, 64, 8, cpu_has_room=True), "never past the limit"
    assert cpu_actors() >= 8
