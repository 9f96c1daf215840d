"""`brain trace FILE [--session ID] [--request REQ_ID] [--html OUT] [--check]`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from brain.tracing import check, diagram, html, model

DESCRIPTION = """\
Read a BRAIN_TRACE file. Without options: a sequence diagram per session, a column per
actor, messages in time order with µs offsets from the first, commit points marked ◆.
--check proves from the trace that every effect message left only after the commit of
its *_started record, and exits 1 naming the first message that did not."""


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    trace = sub.add_parser("trace", help="show or check an actor-message trace",
                           description=DESCRIPTION,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
    trace.add_argument("file", type=Path, help="the BRAIN_TRACE file")
    trace.add_argument("--session", metavar="ID", help="only this session")
    trace.add_argument("--request", metavar="REQ_ID",
                       help="only what one HTTP request caused (its x-request-id)")
    trace.add_argument("--html", metavar="OUT", type=Path,
                       help="also write the diagram as one self-contained HTML page")
    trace.add_argument("--check", action="store_true",
                       help="verify commit-before-send; exit 1 on the first violation")


def run(args: argparse.Namespace) -> int:
    try:
        lines = model.load(args.file)
    except model.TraceUnreadable as exc:
        print(f"brain trace: {exc}", file=sys.stderr)
        return 2
    if args.check:
        violation = check.first_violation(lines)
        if violation is not None:
            print(f"brain trace: commit-before-send violated: {violation}", file=sys.stderr)
            return 1
        print(f"ok: {check.effect_sends(lines)} effect messages, each sent after its commit")
        return 0
    chosen = model.select(lines, args.session, args.request)
    sessions = [args.session] if args.session else model.sessions_of(chosen)
    if not sessions:
        print("brain trace: no line matches", file=sys.stderr)
        return 1
    diagrams = [(f"session {sid}", model.select(chosen, sid)) for sid in sessions]
    for title, session_lines in diagrams:
        print(diagram.render(session_lines, lines, title))
    if args.html is not None:
        args.html.write_text(html.page(diagrams, lines), encoding="utf-8")
    return 0
