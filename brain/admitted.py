"""The admission marker: which turn a web worker admitted without an actor, and in which run.

An admitted turn is a durable `turn_started` with nothing after it. A crash can leave exactly
that shape too, and a crash's leftover must fail `interrupted`, never run. The marker tells
them apart: before it commits `turn_started`, the admitting web worker writes
`sessions/{id}/admitted` with this run's boot id (BRAIN_BOOT_ID, new at every `brain serve`)
and the turn's sequence. A session actor runs the open turn only when the marker names it and
the current boot id; after a restart the boot id differs, so the turn fails `interrupted`
whatever order the start-up scan and new requests take. The marker needs no fsync: if a crash
loses it, the turn it named is a crash's leftover anyway. With BRAIN_OTEL it also carries the
submit's W3C traceparent, so the actor that runs the turn continues the request's trace.
"""

from __future__ import annotations

import os
from pathlib import Path

MARKER_NAME = "admitted"


def mark_admitted(session_dir: Path, boot_id: str, sequence: int,
                  traceparent: str | None = None) -> None:
    """Say that this run admits the turn `sequence` (before its turn_started is committed)."""
    path = session_dir / MARKER_NAME
    tmp = session_dir / f"{MARKER_NAME}.tmp"
    fields = [boot_id, str(sequence), *([traceparent] if traceparent else [])]
    tmp.write_text(" ".join(fields) + "\n", encoding="ascii")
    os.replace(tmp, path)


def _marker_fields(session_dir: Path) -> list[str]:
    try:
        return (session_dir / MARKER_NAME).read_text(encoding="ascii").split()
    except (OSError, UnicodeDecodeError):
        return []


def admitted_in_this_run(session_dir: Path, boot_id: str | None, sequence: int) -> bool:
    """True when the marker names the turn `sequence` and this run's boot id."""
    if not boot_id:
        return False
    return _marker_fields(session_dir)[:2] == [boot_id, str(sequence)]


def admitted_traceparent(session_dir: Path) -> str | None:
    """The traceparent of the submit that admitted the marked turn, if it carried one."""
    fields = _marker_fields(session_dir)
    return fields[2] if len(fields) > 2 else None


def admitted_sessions(sessions_path: Path, boot_id: str) -> list[str]:
    """Sessions whose marker names this run: turns admitted and answered 202 whose actor may
    never have been told (the admitting web worker died between the 202 and the hand-over)."""
    return [marker.parent.name for marker in sessions_path.glob(f"*/{MARKER_NAME}")
            if _marker_fields(marker.parent)[:1] == [boot_id]]


def clear_admitted(session_dir: Path) -> None:
    (session_dir / MARKER_NAME).unlink(missing_ok=True)
