"""No message is lost or stalled when Thespian reuses its TCP connections.

Thespian 4.0.1, with socket reuse on, can close the idle connection a peer has just picked for
its next message; the message then waited 35 s for Thespian's retry or was dropped as sent to a
dead target (brain/actors/thespian/reuse.py). Two real actors in a real multiprocTCPBase system
exchange bounded bursts of 2 MB pings and their pongs, so that the two directions cross while a
connection is still being read: without the patch some pair did not finish within the deadline
in every run measured, with it all finish in about a second.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from thespian.system.transport import TCPTransport

from brain.actors.thespian.reuse import closed_by_peer
from tests.support.thespian_scenarios import run_scenario

REPO = Path(__file__).resolve().parents[2]
PAIRS, ROUNDS, BURST = 4, 20, 4
DEADLINE_S = 15.0


def test_bursts_both_ways_lose_no_message_with_reused_connections() -> None:
    run = subprocess.run(
        [sys.executable, "-m", "tests.support.burst_actors", "--pairs", str(PAIRS),
         "--rounds", str(ROUNDS), "--burst", str(BURST), "--deadline-s", str(DEADLINE_S)],
        cwd=REPO, capture_output=True, text=True, timeout=DEADLINE_S + 30)
    assert run.returncode == 0, run.stderr[-2000:]
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert result["done"] == PAIRS, f"bursts unfinished after {DEADLINE_S} s: {result}"
    assert result["pongs"] == PAIRS * ROUNDS * BURST


def test_brain_keeps_connections_open_between_messages() -> None:
    from brain.actors.thespian.confine import confine_thespian

    confine_thespian("127.0.0.1")
    assert TCPTransport.REUSE_SOCKETS is True


def test_a_connection_closed_by_the_peer_is_seen_before_reuse() -> None:
    import socket

    ours, theirs = socket.socketpair()
    try:
        assert not closed_by_peer(ours)
        theirs.send(b"x")
        assert not closed_by_peer(ours), "pending data is the peer talking, not a close"
        ours.recv(1)
        theirs.close()
        assert closed_by_peer(ours)
    finally:
        ours.close()


def test_unpatched_thespian_drops_a_message_written_into_a_closed_idle_connection() -> None:
    """The symptom (docs/thespian-patches.md): Thespian as it ships takes the idle connection
    the peer has closed, meets EPIPE and drops the message as sent to a dead target."""
    seen = run_scenario("reuse", patched=False)
    assert seen["first"]["arrived"]
    assert (seen["second"]["status"], seen["second"]["arrived"]) == ("-SENDSTS_DEADTARGET", False)


def test_the_patch_sends_it_on_a_fresh_connection() -> None:
    seen = run_scenario("reuse", patched=True)
    assert (seen["second"]["status"], seen["second"]["arrived"]) == ("+SENDSTS_SENT", True)


def test_a_close_the_peek_misses_is_sent_again_on_a_fresh_connection() -> None:
    """The close lands after the peek: the failed transmit is resent at once, not dropped."""
    seen = run_scenario("reuse-late-close", patched=True)
    assert (seen["second"]["status"], seen["second"]["arrived"]) == ("+SENDSTS_SENT", True)
