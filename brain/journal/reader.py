"""Reading a session without its actor: projection, status, transcript and Event pages.

A `SessionReader` only reads. It is safe in another process while the session's writer
appends, because the scanner yields only whole batches and treats an unfinished tail as not
yet written; it never truncates anything. Damage found while the last segment was changing (a
writer truncating a torn tail and appending again) is read again before it is reported.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from brain.journal.checkpoint import load_valid_checkpoint, seek_point
from brain.journal.errors import CorruptJournal, InvalidRecord
from brain.journal.events import to_event
from brain.journal.frames import FLAG_END_OF_BATCH, FRAME_HEADER_SIZE
from brain.journal.projection import Projection, ProjectionBuilder
from brain.journal.scan import JournalScan
from brain.journal.segments import (
    Cursor,
    list_segments,
    read_frame_header,
    segment_name,
)
from brain.journal.writer import CHECKPOINT_NAME
from brain.protocol.records import TRANSCRIPT_CHANGED

PAGE_EVENTS = 1000
PAGE_BYTES = 8 << 20
RETRY_DELAY = 0.01
RETRIES = 3

T = TypeVar("T")


class SessionReader:
    """Reads `sessions/{id}` (its `journal/` and `checkpoint`). Cheap: make one per request."""

    def __init__(
        self,
        session_dir: str | os.PathLike[str],
        *,
        journal_dir: str | os.PathLike[str] | None = None,
        checkpoint_path: str | os.PathLike[str] | None = None,
    ) -> None:
        self.session_dir = Path(session_dir)
        self.journal_dir = Path(journal_dir) if journal_dir else self.session_dir / "journal"
        self.checkpoint_path = (
            Path(checkpoint_path) if checkpoint_path else self.session_dir / CHECKPOINT_NAME
        )

    # --- projections ---------------------------------------------------------------------------

    def projection(self) -> Projection:
        """The projection through the last committed batch (checkpoint, then the tail)."""
        projection, error = self._retry(self._fold)
        if error is not None:
            raise error
        return projection

    def status(self) -> dict[str, Any]:
        """`{status, created_at, updated_at, last_sequence, config, turn}`.

        A refused journal reports status `damaged` (with what the readable prefix says)
        instead of raising: the Session resource stays readable so the damage is visible.
        """
        return self.status_and_damage()[0]

    def status_and_damage(self) -> tuple[dict[str, Any], CorruptJournal | None]:
        """`status()` and, for a refused journal, the refusal, from one read: a damaged
        Session names where it is damaged without reading its journal twice."""
        projection, error = self._retry(lambda: self._fold(content=False))
        view = projection.status_view()
        if error is not None:
            view["status"] = "damaged"
        return view, error

    def status_projection(self) -> tuple[Projection, CorruptJournal | None]:
        """The projection without transcript and kv (a status read), and the refusal of a
        damaged journal, whose readable prefix the projection then describes."""
        return self._retry(lambda: self._fold(content=False))

    def damage(self) -> CorruptJournal | None:
        """The reason this session is refused, or None when it reads cleanly."""
        return self._retry(lambda: self._fold(content=False))[1]

    def transcript(self) -> dict[str, Any]:
        """`{"messages", "through_sequence"}`; through_sequence is the last folded record."""
        projection = self.projection()
        return {"messages": list(projection.transcript), "through_sequence": projection.last_seq}

    def _fold(self, content: bool = True) -> tuple[Projection, CorruptJournal | None]:
        cp, point, _why = load_valid_checkpoint(
            self.journal_dir, self.checkpoint_path, content=content
        )
        builder = ProjectionBuilder(cp.projection if cp is not None else None, content=content)
        scan = JournalScan(self.journal_dir, point.cursor if point is not None else None)
        frame = None
        try:
            for frame in scan:
                builder.apply(frame.record)
        except CorruptJournal as exc:
            return builder.build(), exc
        except InvalidRecord as exc:
            assert frame is not None
            path = self.journal_dir / segment_name(frame.segment)
            return builder.build(), CorruptJournal(path, frame.offset, frame.seq, str(exc))
        return builder.build(), None

    def _retry(
        self, read: Callable[[], tuple[T, CorruptJournal | None]]
    ) -> tuple[T, CorruptJournal | None]:
        """Run `read`; if it found damage while the last segment was changing under it (a
        writer appending, or reopening after a crash), read again. Damage in bytes that did
        not change is reported at once."""
        for _attempt in range(RETRIES):
            before = self._last_segment_state()
            result = read()
            error = result[1]
            if error is None or self._last_segment_state() == before:
                return result
            time.sleep(RETRY_DELAY)
        return result

    def _last_segment_state(self) -> tuple[str, int, int] | None:
        segments = list_segments(self.journal_dir)
        if not segments:
            return None
        try:
            st = os.stat(segments[-1].path)
        except FileNotFoundError:
            return None
        return (segments[-1].path.name, st.st_size, st.st_mtime_ns)

    # --- events --------------------------------------------------------------------------------

    def events_page(self, after: int = 0, limit: int = PAGE_EVENTS) -> dict[str, Any]:
        """`{events, next_after, has_more}`: Events with sequence > `after`, at most `limit`
        (1..1000) and 8 MiB of journal frames, except that a lone larger Event is returned."""
        if not 1 <= limit <= PAGE_EVENTS:
            raise ValueError(f"limit must be between 1 and {PAGE_EVENTS}")
        page, error = self._retry(lambda: self._caught(self._page, after, limit))
        if error is not None:
            raise error
        return page

    @staticmethod
    def _caught(read: Callable[..., T], *args: Any) -> tuple[T | None, CorruptJournal | None]:
        try:
            return read(*args), None
        except CorruptJournal as exc:
            return None, exc

    def _page(self, after: int, limit: int) -> dict[str, Any]:
        events: list[dict[str, Any]] = []
        size = 0
        has_more = False
        for frame_size, event in self._events(after):
            if len(events) >= limit or (events and size + frame_size > PAGE_BYTES):
                has_more = True
                break
            events.append(event)
            size += frame_size
        next_after = events[-1]["sequence"] if events else max(after, 0)
        return {"events": events, "next_after": next_after, "has_more": has_more}

    def events_after(self, after: int = 0) -> Iterator[dict[str, Any]]:
        """Every committed Event with sequence > `after`, in order (SSE catch-up). It ends at
        the end of the journal as it was when reading reached it."""
        for _size, event in self._events(after):
            yield event

    def follower(self, after: int = 0) -> EventFollower:
        """An incremental reader of Events after `after`, for a live subscriber."""
        return EventFollower(self, after)

    def _events(self, after: int) -> Iterator[tuple[int, dict[str, Any]]]:
        """`(frame size, Event)` for each Event after `after`: the one loop of page reads and
        SSE catch-up (the size is what the page's 8 MiB bound counts)."""
        cursor, length = self._seek(after + 1)
        for frame in JournalScan(self.journal_dir, cursor):
            record = frame.record
            before = length
            if record["kind"] == TRANSCRIPT_CHANGED:
                length = record["length"]
            if frame.seq <= after:
                continue
            event = to_event(record, before, owned=True)
            if event is not None:
                yield FRAME_HEADER_SIZE + len(frame.payload), event

    def _seek(self, seq: int) -> tuple[Cursor | None, int]:
        """Where to start reading so that `seq` is reached soon, and the transcript length
        there. Any seek point that does not match the journal is ignored (read from the start)."""
        cp, point, _why = load_valid_checkpoint(
            self.journal_dir, self.checkpoint_path, with_projection=False, meta_only=True
        )
        if cp is None or point is None:
            return None, 0
        if seq >= point.seq:
            return point.cursor, point.transcript_length
        found = seek_point(cp.index, seq)
        if found is None:
            return None, 0
        header = read_frame_header(self.journal_dir / segment_name(found.segment), found.offset)
        if header is None or header.seq != found.seq:
            return None, 0
        return found.cursor, found.transcript_length


class EventFollower:
    """Events after a sequence, read incrementally for a live subscriber.

    Each `read()` resumes at the batch boundary where the previous one stopped, so following a
    session costs only the new frames, never a new seek through the checkpoint. Stopping early
    (a `through` bound, or a consumer that abandons the iterator) is safe: the next read starts
    again from the last batch boundary passed and skips what was already delivered.
    """

    def __init__(self, reader: SessionReader, after: int) -> None:
        self._reader = reader
        self.after = after
        self._resume: tuple[Cursor | None, int] | None = None

    def read(self, through: int | None = None) -> Iterator[dict[str, Any]]:
        """Committed Events after the last one delivered, up to `through` when given."""
        cursor, length = self._resume or self._reader._seek(self.after + 1)
        for frame in JournalScan(self._reader.journal_dir, cursor):
            if through is not None and frame.seq > through:
                return
            record = frame.record
            before = length
            if record["kind"] == TRANSCRIPT_CHANGED:
                length = record["length"]
            if frame.flags & FLAG_END_OF_BATCH:
                self._resume = (Cursor(frame.segment, frame.end, frame.seq + 1), length)
            if frame.seq <= self.after:
                continue
            event = to_event(record, before, owned=True)
            self.after = frame.seq
            if event is not None:
                yield event
