"""`brain journal verify PATH|SESSION_ID` and `brain journal dump SESSION_ID [--from SEQ] [--json]`.

Operator tools over the journal library. `verify` reads every frame of every segment (it trusts
no checkpoint), folds every record, and checks the checkpoint against the journal; it exits 1
with the first problem, else prints counts. Its rules are the writer open's: a complete frame
whose checksum fails is refused wherever it is, under the checkpoint too; a torn tail is
reported but is not an error (the next writer open truncates it); a checkpoint whose history
checksums disagree with frames that all verify is stale (the next open rebuilds it). `dump`
prints records in journal order. Neither writes anything.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from brain.journal import (
    CHECKPOINT_NAME,
    CorruptJournal,
    InvalidRecord,
    JournalError,
    JournalScan,
    ProjectionBuilder,
    list_segments,
    load_checkpoint,
    rfc3339_ms,
    to_event,
)
from brain.journal.checkpoint import resume_cursor
from brain.journal.damage import Damage
from brain.journal.history import history_mismatch
from brain.journal.segments import segment_name
from brain.protocol.records import TRANSCRIPT_CHANGED


def resolve(target: str, environ: dict[str, str] | None = None) -> tuple[Path, Path | None]:
    """`(journal_dir, checkpoint_path or None)` for a path or a session id.

    A path may be a session directory (holding `journal/`), a journal directory, or one
    `.seg` file's directory. Anything else is a session id under
    `$BRAIN_DATA_DIR/sessions/` (default `./brain-data`).
    """
    environ = os.environ if environ is None else environ
    path = Path(target)
    if not path.exists() and "/" not in target and target not in (".", ".."):
        path = Path(environ.get("BRAIN_DATA_DIR", "./brain-data")) / "sessions" / target
    if path.is_file() and path.suffix == ".seg":
        path = path.parent
    if (path / "journal").is_dir():
        return path / "journal", path / CHECKPOINT_NAME
    if path.is_dir():
        checkpoint = path.parent / CHECKPOINT_NAME
        return path, checkpoint if checkpoint.exists() else None
    raise JournalError(f"no journal at {path}")


def verify(target: str, out: TextIO | None = None) -> int:
    out = out or sys.stdout
    try:
        journal_dir, checkpoint_path = resolve(target)
        segments = list_segments(journal_dir)
        checkpoint = load_checkpoint(checkpoint_path)[0] if checkpoint_path else None
        at_checkpoint = None
        scan = JournalScan(journal_dir, segments=segments)
        builder = ProjectionBuilder()
        length = 0
        events = 0
        kinds: dict[str, int] = {}
        frame = None
        for frame in scan:
            record = frame.record
            if to_event(record, length) is not None:
                events += 1
            if record["kind"] == TRANSCRIPT_CHANGED:
                length = record["length"]
            kinds[record["kind"]] = kinds.get(record["kind"], 0) + 1
            builder.apply(record)
            if checkpoint is not None and record["seq"] == checkpoint.seq:
                at_checkpoint = builder.build()
    except CorruptJournal as exc:
        print(f"CORRUPT {Damage.of(exc).describe()}", file=out)
        return 1
    except InvalidRecord as exc:
        if frame is None:
            print(f"INVALID {journal_dir}: {exc}", file=out)
        else:
            where = Damage(str(journal_dir / segment_name(frame.segment)), frame.offset,
                           frame.seq, str(exc))
            print(f"INVALID {where.describe()}", file=out)
        return 1
    except JournalError as exc:
        print(f"ERROR {exc}", file=out)
        return 1
    projection = builder.build()
    print(f"journal     {journal_dir}", file=out)
    print(f"segments    {len(segments)}", file=out)
    print(f"records     {scan.frames}", file=out)
    print(f"batches     {scan.batches}", file=out)
    print(f"events      {events}", file=out)
    print(f"bytes       {scan.bytes}", file=out)
    print(f"last_seq    {scan.last_seq}", file=out)
    print(f"status      {projection.status or 'creating'}", file=out)
    print(f"transcript  {len(projection.transcript)} messages", file=out)
    print(f"kv          {len(projection.kv)} keys", file=out)
    print("kinds       " + ", ".join(f"{k}={n}" for k, n in sorted(kinds.items())), file=out)
    if scan.torn is not None:
        torn = scan.torn
        print(
            f"torn tail   {torn.path.name} offset {torn.offset} ({torn.reason}; "
            f"{torn.size - torn.offset} bytes; truncated at the next open)",
            file=out,
        )
    if scan.unused:
        print(f"room        {scan.unused} bytes of zeros after the last batch", file=out)
    state, ok = _checkpoint_state(checkpoint_path, journal_dir, segments, at_checkpoint)
    print(f"checkpoint  {state}", file=out)
    return 0 if ok else 1


def _checkpoint_state(
    path: Path | None, journal_dir: Path, segments: list[Any], folded: Any
) -> tuple[str, bool]:
    """A missing, damaged or stale checkpoint is only rebuilt; one that matches the journal's
    position and bytes but not its fold is a bug worth failing on. (Called once every frame
    has verified, so history checksums that disagree mean a stale checkpoint, not damage.)"""
    if path is None:
        return "none", True
    cp, why = load_checkpoint(path)
    if cp is None:
        return f"{why} (it will be rebuilt)", True
    point, why = resume_cursor(journal_dir, cp)
    if point is None:
        return f"{why} (it will be rebuilt)", True
    mismatch = history_mismatch(segments, cp.history, cp.segment, point.offset)
    if mismatch is not None:
        return f"stale ({mismatch}; it will be rebuilt)", True
    if folded != cp.projection:
        return f"DISAGREES with the journal's fold at sequence {cp.seq}", False
    return f"valid through {cp.seq}", True


def dump(target: str, start: int = 1, as_json: bool = False, out: TextIO | None = None) -> int:
    out = out or sys.stdout
    try:
        journal_dir, _ = resolve(target)
        for frame in JournalScan(journal_dir):
            record = frame.record
            if record["seq"] < start:
                continue
            if as_json:
                print(json.dumps(record, default=repr, ensure_ascii=False), file=out)
            else:
                fields = {k: v for k, v in record.items() if k not in ("seq", "kind", "at")}
                print(
                    f"{record['seq']:>8} {rfc3339_ms(record['at'])} {record['kind']:<24} "
                    f"{json.dumps(fields, default=repr, ensure_ascii=False)}",
                    file=out,
                )
    except BrokenPipeError:
        return 0
    except CorruptJournal as exc:
        print(f"CORRUPT {Damage.of(exc).describe()}", file=sys.stderr)
        return 1
    except JournalError as exc:
        print(f"ERROR {exc}", file=sys.stderr)
        return 1
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="brain journal", description="Verify or dump a session journal."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    p_verify = sub.add_parser("verify", help="check every frame; exit 1 on the first problem")
    p_verify.add_argument("target", metavar="PATH|SESSION_ID")
    p_dump = sub.add_parser("dump", help="print the records in journal order")
    p_dump.add_argument("target", metavar="SESSION_ID")
    p_dump.add_argument("--from", dest="start", type=int, default=1, metavar="SEQ")
    p_dump.add_argument("--json", action="store_true", help="one JSON object per line")
    args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    if args.command == "verify":
        return verify(args.target)
    return dump(args.target, args.start, args.json)


if __name__ == "__main__":
    sys.exit(main())
