"""`brain replay SESSION_ID [--turn N] [--agentloop FILE.wasm] [--data-dir DIR] [--json]`."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from brain.replayer.refusal import ReplayRefused

DESCRIPTION = """\
Replay one finished turn of a session with an Agentloop (default: the session's own) in a
fresh instance, answering every guest call from what the turn's activation journaled:
nothing is sent to a model or Tool, nothing is written to the session. Prints one line per
guest call (match, answered from the journal, or the first divergence with both sides), then
the verdict. Reads the data dir directly; works with or without a running server.
Turns are numbered by the sequence of their turn_started record (default: the last finished).
Exit codes: 0 no divergence, 1 diverged, 2 the replay could not run (unknown session, damaged
journal, no such turn, an Agentloop that cannot be loaded)."""


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    replay = sub.add_parser("replay", help="replay a past turn against an Agentloop, offline",
                            description=DESCRIPTION,
                            formatter_class=argparse.RawDescriptionHelpFormatter)
    replay.add_argument("session_id", metavar="SESSION_ID")
    replay.add_argument("--turn", type=int, metavar="N",
                        help="the turn's sequence (its turn_started); default: the last "
                             "finished turn")
    replay.add_argument("--agentloop", type=Path, metavar="FILE.wasm",
                        help="the Agentloop to run (core module or component); default: the "
                             "module the session recorded at creation")
    replay.add_argument("--data-dir", metavar="DIR",
                        help="the data dir (default: BRAIN_DATA_DIR, else ./brain-data)")
    replay.add_argument("--json", action="store_true",
                        help="print the report (or the error) as one JSON object")


def run(args: argparse.Namespace) -> int:
    from brain.errors import ConfigError
    from brain.replayer.run import replay_turn
    from brain.settings import Settings

    try:
        settings = Settings.from_env()
        report = replay_turn(settings, args.session_id, args.turn, args.agentloop)
    except (ReplayRefused, ConfigError) as exc:
        refused = exc if isinstance(exc, ReplayRefused) else \
            ReplayRefused("invalid_request", str(exc))
        if args.json:
            print(json.dumps({"error": refused.as_json()}))
        else:
            print(f"brain replay: {refused.message}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(report.as_json(), default=str))
    else:
        print("\n".join(report.lines()))
    return 0 if report.divergence is None else 1
