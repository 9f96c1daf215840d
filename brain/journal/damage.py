"""Where a refused journal is damaged and why, in the one wording every report uses.

`brain journal verify`, the `damage` object of a damaged Session, the `session_damaged` error
of a read or a write and the server log all describe the same refusal. They take it from here,
so an operator who reads one of them recognises it in the others and can search for it: the
segment file, the byte offset of the frame, the sequence expected there and the scanner's
reason (a checksum mismatch, a sequence gap, a length that runs past its segment...).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol


class Refusal(Protocol):
    """What a `CorruptJournal` carries (errors.py words its own message with `describe`, so
    this module does not import it back)."""

    path: str
    offset: int
    seq: int | None
    reason: str


def describe(segment: object, offset: int, sequence: int | None, reason: str) -> str:
    """`SEGMENT at byte offset N (sequence S): REASON`, the sequence left out when unknown."""
    where = f" (sequence {sequence})" if sequence is not None else ""
    return f"{segment} at byte offset {offset}{where}: {reason}"


@dataclass(frozen=True, slots=True)
class Damage:
    """One refusal: `segment` is the file as shown (relative to a root when one was given),
    `sequence` the record expected at `offset` (None where the scan could not tell)."""

    segment: str
    offset: int
    sequence: int | None
    reason: str

    @classmethod
    def of(cls, refused: Refusal, root: Path | None = None) -> Damage:
        """The damage `refused` names; under `root` the segment is shown relative to it, and a
        segment outside it by its file name alone (no more of the disk's layout than that)."""
        path = Path(refused.path)
        shown = str(path)
        if root is not None:
            try:
                shown = str(path.relative_to(root))
            except ValueError:
                shown = path.name
        return cls(shown, refused.offset, refused.seq, refused.reason)

    def describe(self) -> str:
        return describe(self.segment, self.offset, self.sequence, self.reason)

    def as_json(self) -> dict[str, Any]:
        """The `damage` object of a damaged Session (docs/http-api.md)."""
        return {"segment": self.segment, "offset": self.offset, "sequence": self.sequence,
                "reason": self.reason}
