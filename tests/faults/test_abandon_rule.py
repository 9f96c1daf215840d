"""Who hears `internal` when a session's commit fails (brain/sessions/abandon.py): pure."""

from __future__ import annotations

from brain.sessions.abandon import waiting_clients
from brain.sessions.state import (
    ClientReply,
    GuestAnswer,
    Limits,
    Phase,
    Requester,
    Step,
    Turn,
    new_session,
)

SEND = Requester("web-1", "r-send")
SUBMIT = Requester("web-2", "r-submit")
END = Requester("web-3", "r-end")


def test_the_waiting_send_the_failed_steps_receipt_and_waiting_ends_each_once() -> None:
    before = new_session("s", Limits())
    running = before.__class__(**{**before.__dict__, "phase": Phase.RUNNING,
                                  "turn": Turn(5, 6, SEND), "waiting_ends": (END,)})
    failed = Step(running, replies=(ClientReply(SUBMIT, body={}), GuestAnswer(1, {}),
                                    ClientReply(SEND, body={})))
    assert waiting_clients(running, failed) == [SEND, END, SUBMIT]


def test_a_submits_turn_and_internal_requesters_are_nobody_to_answer() -> None:
    before = new_session("s", Limits())
    running = before.__class__(**{**before.__dict__, "phase": Phase.RUNNING,
                                  "turn": Turn(5, 6, None)})
    nobody = Requester(None, "recover-s")
    assert waiting_clients(running, Step(running, replies=(ClientReply(nobody),))) == []
