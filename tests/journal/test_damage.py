"""The one wording of a refused journal (brain/journal/damage.py): what verify prints, what a
Session's `damage` holds and what `session_damaged` says are the same facts, said the same way."""

from __future__ import annotations

from pathlib import Path

from brain.journal import CorruptJournal
from brain.journal.damage import Damage


def test_a_refusal_is_worded_once(tmp_path: Path) -> None:
    segment = tmp_path / "sessions" / "s1" / "journal" / f"{1:020d}.seg"
    refused = CorruptJournal(segment, 452, 4, "frame header checksum mismatch")
    assert str(refused) == (f"{segment} at byte offset 452 (sequence 4): "
                            "frame header checksum mismatch")
    shown = Damage.of(refused, tmp_path)
    assert shown.describe() == (f"sessions/s1/journal/{1:020d}.seg at byte offset 452 "
                                "(sequence 4): frame header checksum mismatch")
    assert shown.as_json() == {"segment": f"sessions/s1/journal/{1:020d}.seg", "offset": 452,
                               "sequence": 4, "reason": "frame header checksum mismatch"}
    assert Damage.of(refused).describe() == str(refused)


def test_a_segment_outside_the_root_shows_its_name_only_and_an_unknown_sequence_nothing(
    tmp_path: Path,
) -> None:
    refused = CorruptJournal("/elsewhere/00000000000000000007.seg", 0, None, "sequence gap")
    shown = Damage.of(refused, tmp_path)
    assert shown.describe() == "00000000000000000007.seg at byte offset 0: sequence gap"
    assert shown.as_json()["sequence"] is None
