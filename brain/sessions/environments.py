"""Which of a session's Environments are set up now, decided from its journal's records.

Teardown is owed only to an Environment whose setup succeeded and that no earlier teardown
already removed: tearing down one whose setup failed (a `host` Environment with no host, say)
would fail on every delete and leave the session undeletable, and a delete retried after a
partial teardown should retry only what failed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from brain.protocol.records import ENVIRONMENT_OP_ENDED, ENVIRONMENT_OP_STARTED


def set_up_in(records: Iterable[Mapping[str, Any]]) -> set[str]:
    """Names of the Environments whose last successful op was `setup`, from a session's
    records in order (brain/journal/scan.py `journal_records` reads them)."""
    started: dict[int, tuple[str, str]] = {}  # environment_op_started seq -> (name, op)
    set_up: set[str] = set()
    for record in records:
        kind = record["kind"]
        if kind == ENVIRONMENT_OP_STARTED:
            started[record["seq"]] = (record.get("environment"), record.get("op"))
        elif kind == ENVIRONMENT_OP_ENDED and record.get("started") in started:
            name, op = started[record["started"]]
            if op == "setup":
                set_up.add(name)
            elif op == "teardown":
                set_up.discard(name)
    return set_up
