"""Which of a session's Environments are set up now, read from its journal.

Teardown is owed only to an Environment whose setup succeeded and that no earlier teardown
already removed: tearing down one whose setup failed (a `host` Environment with no host, say)
would fail on every delete and leave the session undeletable, and a delete retried after a
partial teardown should retry only what failed.
"""

from __future__ import annotations

from pathlib import Path

from brain.journal.scan import JournalScan


def environments_set_up(journal_dir: Path) -> set[str]:
    """Names of the Environments whose last successful op was `setup`."""
    started: dict[int, tuple[str, str]] = {}  # environment_op_started seq -> (name, op)
    set_up: set[str] = set()
    for frame in JournalScan(journal_dir):
        record = frame.record
        kind = record["kind"]
        if kind == "environment_op_started":
            started[record["seq"]] = (record.get("environment"), record.get("op"))
        elif kind == "environment_op_ended" and record.get("started") in started:
            name, op = started[record["started"]]
            if op == "setup":
                set_up.add(name)
            elif op == "teardown":
                set_up.discard(name)
    return set_up
