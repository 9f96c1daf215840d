"""The message counts `cpu_split --messages` prints, from trace lines."""

from __future__ import annotations

import json
from pathlib import Path

from tools.bench.message_count import count, report, since

LINES = [
    {"dir": "send", "kind": "gateway", "msg": "ToSession", "command": "StartTurn"},
    {"dir": "recv", "kind": "registry", "msg": "ToSession", "command": "StartTurn"},
    {"dir": "recv", "kind": "session", "msg": "Delivered", "command": "StartTurn"},
    {"dir": "commit", "kind": "session", "msg": "commit"},
    {"dir": "commit", "kind": "session", "msg": "commit"},
    {"dir": "recv", "kind": "registry", "msg": "Released"},
    {"dir": "recv", "kind": "registry", "msg": "Released"},
    {"dir": "recv", "kind": "registry", "msg": "WakeupMessage(ForkForBacklog)"},
    {"dir": "mark", "kind": "session", "msg": "turn 3 suspended"},
]


def test_received_messages_timers_and_commits_are_counted_apart() -> None:
    received, timers, commits = count(LINES)
    assert received == {("registry", "ToSession(StartTurn)"): 1,
                        ("session", "Delivered(StartTurn)"): 1, ("registry", "Released"): 2}
    assert timers == {("registry", "ForkForBacklog"): 1}
    assert commits == 2


def test_the_report_is_per_turn_largest_first() -> None:
    text = report(LINES, turns=2)
    assert text[1].split() == ["1.00", "registry", "Released"]
    assert "2.00  all messages" in "\n".join(text)
    assert text[-1] == "  journal commits per turn: 1.00"


def test_only_lines_from_the_mark_are_read_and_a_torn_tail_is_left_out(tmp_path: Path) -> None:
    trace = tmp_path / "trace.jsonl"
    before, after = {**LINES[0], "t_us": 10}, {**LINES[1], "t_us": 20}
    trace.write_text(json.dumps(before) + "\n" + json.dumps(after) + "\n" + '{"dir": "re')
    assert [(line["msg"], line["t_us"]) for line in since(trace, 20)] == [("ToSession", 20)]
