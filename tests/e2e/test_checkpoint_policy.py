"""The session actor writes the checkpoint when enough was committed since the last one, not
after every turn, and at once when the session settles (ended)."""

from __future__ import annotations

from brain.journal import JournalScan, load_checkpoint
from brain.journal.writer import CHECKPOINT_RECORDS
from tests.support.server import BrainServer
from tests.support.waiting import wait_for

CHECKPOINT_WAIT_SECS = 10.0


def last_seq(s: BrainServer, sid: str) -> int:
    return max(frame.seq for frame in JournalScan(s.data_dir / "sessions" / sid / "journal"))


def checkpoint_through(s: BrainServer, sid: str, seq: int) -> bool:
    """Whether the checkpoint covers `seq` (it is written just after the reply is sent)."""
    cp, _why = load_checkpoint(s.data_dir / "sessions" / sid / "checkpoint")
    return cp is not None and cp.seq == seq


def test_no_checkpoint_per_turn_one_when_due_and_one_when_ended(
    brain_server: BrainServer,
) -> None:
    s = brain_server
    sid = s.create_session()["id"]
    checkpoint = s.data_dir / "sessions" / sid / "checkpoint"
    for turn in range(2):
        assert s.send(sid, f"turn {turn}")["status"] == "ended"
    assert not checkpoint.exists()  # two turns replay faster than a checkpoint is written
    assert s.request("GET", f"/v1/sessions/{sid}/transcript").json()["through_sequence"] \
        == last_seq(s, sid)  # reads fold the journal without one

    turns = 2
    while last_seq(s, sid) < CHECKPOINT_RECORDS:
        assert s.send(sid, f"turn {turns}")["status"] == "ended"
        turns += 1
    through = last_seq(s, sid)  # written at the end of the turn that made it due
    wait_for(lambda: checkpoint_through(s, sid, through), timeout=CHECKPOINT_WAIT_SECS,
             what="the checkpoint that came due")

    assert s.request("POST", f"/v1/sessions/{sid}/end").json()["status"] == "ended"
    through = last_seq(s, sid)
    assert through > CHECKPOINT_RECORDS
    wait_for(lambda: checkpoint_through(s, sid, through), timeout=CHECKPOINT_WAIT_SECS,
             what="the checkpoint of the ended session")  # though only two records were due
    transcript = s.request("GET", f"/v1/sessions/{sid}/transcript").json()
    assert len(transcript["messages"]) == 2 * turns
