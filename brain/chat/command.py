"""`brain chat [SESSION_ID]`: its arguments, and the non-interactive mode (stdin not a tty)."""

from __future__ import annotations

import argparse
import sys

from brain.chat import render
from brain.chat.options import ChatSetupError, resolve_token, resolve_url
from brain.client import Brain, BrainClientError, Session

DESCRIPTION = """\
Talk to an agent: creates a session (or attaches to SESSION_ID) and streams the model's
answer as it is written, with Tool calls and their outcomes as they commit. Ctrl-C
interrupts the turn in flight; a second Ctrl-C leaves. Commands: /transcript, /events N,
/end, /quit. When stdin is not a terminal, its text is sent as one message and the answer
printed (exit 1 if the turn failed); the session id goes to stderr."""


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    chat = sub.add_parser("chat", help="talk to an agent from the terminal",
                          description=DESCRIPTION,
                          formatter_class=argparse.RawDescriptionHelpFormatter)
    chat.add_argument("session_id", nargs="?", metavar="SESSION_ID",
                      help="attach to this session instead of creating one")
    chat.add_argument("--url", help="Brain's base URL (default: http:// + BRAIN_LISTEN)")
    chat.add_argument("--token", help="bearer token (default: --token-file, BRAIN_API_TOKEN, "
                                      "else $BRAIN_DATA_DIR/operator.token)")
    chat.add_argument("--token-file", metavar="F", help="read the bearer token from F")
    chat.add_argument("--model", help="model of a new session (default: the server's)")
    chat.add_argument("--tools", help="comma-separated Tools of a new session")


def run(args: argparse.Namespace) -> int:
    try:
        url, token = resolve_url(args.url), resolve_token(args.token, args.token_file)
    except ChatSetupError as exc:
        print(f"brain chat: {exc}", file=sys.stderr)
        return 2
    try:
        with Brain(url, token) as brain:
            session = open_session(brain, args)
            if sys.stdin.isatty():
                from brain.chat.conversation import Conversation

                return Conversation(session).run()
            return one_message(session)
    except BrainClientError as exc:
        print(f"brain chat: {exc}", file=sys.stderr)
        return 1


def open_session(brain: Brain, args: argparse.Namespace) -> Session:
    if args.session_id:
        return brain.session(args.session_id)
    tools = [name.strip() for name in args.tools.split(",") if name.strip()] if args.tools \
        else None
    return brain.create_session(model=args.model, tools=tools)


def one_message(session: Session) -> int:
    """Send stdin's text as one message; the answer to stdout, a failure to stderr."""
    print(f"session {session.id}", file=sys.stderr)
    text = sys.stdin.read().strip()
    if not text:
        print("brain chat: no message on stdin", file=sys.stderr)
        return 2
    result = session.send(text)
    if result.ok:
        print(render.message_text(result.output))
        return 0
    print(f"turn failed: {render.error_text(result.raw.get('error') or {})}", file=sys.stderr)
    return 1
