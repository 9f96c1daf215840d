"""Boot hands the registry the sessions a crash left with work in flight, and makes sure it
got them.

At start-up, boot scans the data dir for sessions whose journal shows work in flight (a turn, a
creation, an ending, an effect; brain/journal/statuses.py, brain/sessions/scan.py) and has the
registry open each one, so that the interrupted work is recorded failed before anyone asks
(`Recover`). Thespian's `tell` returns quietly when its transmit fails, and a lost `Recover` would
leave that session's status `running` until its next command, which a client that only reads it
never sends. So boot asks instead: `RecoverSessions` in batches, each answered by the registry once
it holds it, and a batch with no answer in time is sent again. A repeat is harmless: the registry
does not queue a second `Recover` behind a waiting one, and recovering a recovered session records
nothing.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable
from typing import Any

from brain.protocol.messages import RecoverSessions, Reply

BATCH = 256  # sessions per message: a crash of a busy server can leave thousands
CONFIRM_SECS = 10.0
ATTEMPTS = 5


class RecoveryNotTaken(RuntimeError):
    """The registry did not confirm a batch after every attempt: boot stops rather than
    report `ready` with sessions that would stay `running`."""


def hand_over_recoveries(asys: Any, registry: Any, session_ids: Iterable[str],
                         confirm_secs: float = CONFIRM_SECS) -> int:
    """Give the registry a `Recover` for each session, confirmed; the number handed over."""
    pending = list(session_ids)
    for start in range(0, len(pending), BATCH):
        batch = tuple(pending[start:start + BATCH])
        if not _confirmed(asys, registry, batch, confirm_secs):
            raise RecoveryNotTaken(f"the registry did not take the recovery of {len(batch)} "
                                   f"sessions in {ATTEMPTS} attempts")
    return len(pending)


def _confirmed(asys: Any, registry: Any, batch: tuple[str, ...], confirm_secs: float) -> bool:
    sent: set[str] = set()
    for _ in range(ATTEMPTS):
        request_id = f"recover-{uuid.uuid4().hex}"
        sent.add(request_id)
        deadline = time.monotonic() + confirm_secs
        answer = asys.ask(registry, RecoverSessions(request_id, batch), confirm_secs)
        while isinstance(answer, Reply) and answer.request_id not in sent:
            remaining = deadline - time.monotonic()  # an answer to an earlier batch: skip it
            answer = asys.listen(remaining) if remaining > 0 else None
        if isinstance(answer, Reply):  # this attempt's answer, or a late one to an earlier one
            return True
    return False
