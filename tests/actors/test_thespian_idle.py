"""Thespian's loop walks its idle connections without rehashing addresses
(brain/actors/thespian/idle.py)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from tests.support.thespian_scenarios import run_scenario

REPO = Path(__file__).resolve().parents[2]


def test_the_walk_stops_rehashing_and_every_message_still_arrives() -> None:
    shipped = run_scenario("idle", patched=False)
    fixed = run_scenario("idle", patched=True)
    assert shipped["arrived"] == fixed["arrived"] == 20
    assert shipped["idle_kept"] == fixed["idle_kept"] == 30
    assert shipped["address_hashes"] > 5 * fixed["address_hashes"]
    assert fixed["timer_views"] < shipped["timer_views"]


def test_a_kept_hash_is_the_computed_one_and_never_travels() -> None:
    # In a fresh interpreter: the patch changes the class for the whole process.
    code = textwrap.dedent("""
        import pickle, socket
        from thespian.system.transport.IPBase import IPActorAddress
        from brain.actors.thespian.idle import cheapen_idle_socket_walk

        def address(port):
            return IPActorAddress(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP,
                                  "127.0.0.1", port)

        before = hash(address(4321))
        cheapen_idle_socket_walk()
        a = address(4321)
        str(a)
        assert hash(a) == before and hash(a) == before
        assert "_brain_hash" in a.__dict__
        copy = pickle.loads(pickle.dumps(a))
        assert "_brain_hash" not in copy.__dict__ and copy == a and hash(copy) == before
        assert {a: 1}[address(4321)] == 1
        assert hash(address(4322)) != before
        print("ok")
    """)
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, cwd=REPO)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.strip() == "ok"

