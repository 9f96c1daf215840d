"""Thespian describes a message for its debug log only when the line is written
(brain/actors/thespian/identify.py; docs/thespian-patches.md has the report)."""

from __future__ import annotations

import re

from tests.support.thespian_scenarios import run_scenario


def _without_ports_and_times(line: str) -> str:
    return re.sub(r"\d+:\d\d:\d\d(\.\d+)?", "T", re.sub(r":\d+\)", ":P)", line))


def test_no_message_is_rendered_for_a_log_line_that_is_not_written() -> None:
    shipped = run_scenario("identify", patched=False)
    fixed = run_scenario("identify", patched=True)
    assert shipped["arrived"] == fixed["arrived"] == 10
    assert shipped["renderings"] >= 20  # the transmit's and the receive's, for each message
    assert fixed["renderings"] == 0
    assert _without_ports_and_times(fixed["envelope_text"]) == \
        _without_ports_and_times(shipped["envelope_text"]) == \
        "ReceiveEnvelope(from: ActorAddr-(T|:P), <class 'str'> msg: plain)"


def test_a_line_that_is_written_reads_as_thespian_writes_it() -> None:
    shipped = run_scenario("identify-logged", patched=False)
    fixed = run_scenario("identify-logged", patched=True)
    assert len(shipped["logged"]) == 20
    assert [_without_ports_and_times(line) for line in fixed["logged"]] == \
        [_without_ports_and_times(line) for line in shipped["logged"]]
    assert any("msg: Counted(9)" in line for line in fixed["logged"])
