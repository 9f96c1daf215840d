"""The `brain` command: `serve`, `actors`, `web`, `chat`, `journal verify|dump`, `trace`,
`replay`, `mcp list`, `settings`."""

from __future__ import annotations

import argparse
import os
import sys

from brain.agentloop.command import add_parser as add_agentloop_parser
from brain.chat.command import add_parser as add_chat_parser
from brain.replayer.command import add_parser as add_replay_parser
from brain.tools.mcp.command import add_parser as add_mcp_parser
from brain.tracing.command import add_parser as add_trace_parser

SERVE_DESCRIPTION = """\
Run Brain on this machine: the Thespian actor system (one session actor per open
session, the only writer of its journal; model, Tool and Environment executors) and
gunicorn with gevent workers serving the HTTP API. Stops cleanly on Ctrl-C or SIGTERM
(admitted turns finish first, up to BRAIN_DRAIN_SECS).

All state goes under the data directory (./brain-data by default): sessions/ (one
journal per session), environments/ (local Environment working trees),
operator.token (the operator's bearer token, unless BRAIN_API_TOKEN is set) and
run/ (what only the running server uses: its actor port in run/actor.json, the
lock that keeps a second server off the same data dir in run/owner.lock, sockets, caches)."""

SERVE_EPILOG = """\
Configuration: models, Tools, Environments and Agentloops come from the TOML file named
by BRAIN_CONFIG (default: conf/brain.toml in the current directory, if it exists);
every BRAIN_* variable is listed by `brain settings`.
Exit codes: 0 stopped by a signal, 1 a part of Brain failed, 2 a configuration
mistake or a port already in use."""


def package_version() -> str:
    """The installed distribution's version (setup.cfg), as pip reports it."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("brain")
    except PackageNotFoundError:
        return "unknown (not installed)"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(prog="brain", description="Durable sessions for AI agents.")
    parser.add_argument("--version", action="version", version=f"brain {package_version()}")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="run Brain (actors + HTTP) on this machine",
                           description=SERVE_DESCRIPTION, epilog=SERVE_EPILOG,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
    serve.add_argument("--data-dir", metavar="DIR",
                       help="where sessions, journals and the operator token are kept "
                            "(default: BRAIN_DATA_DIR, else ./brain-data)")
    serve.add_argument("--listen", metavar="HOST:PORT",
                       help="address of the HTTP API (default: BRAIN_LISTEN, else "
                            "127.0.0.1:3210)")
    serve.add_argument("--gunicorn-config", metavar="PATH",
                       help="a gunicorn settings file (start from conf/gunicorn.conf.py); "
                            "default: the settings shipped with Brain")
    actors = sub.add_parser("actors", help="run the actor system alone (a service)",
                            description="Run Brain's actor system alone: the service that "
                            "`brain web` (or gunicorn) serves HTTP for. SIGTERM drains "
                            "admitted turns, then stops it. See docs/operations.md.")
    actors.add_argument("--data-dir", metavar="DIR", help="as for `brain serve`")
    web = sub.add_parser("web", help="run the HTTP tier alone (gunicorn), for `brain actors`",
                         description="Wait for the actor system of the data dir (`brain "
                         "actors`), then run gunicorn with Brain's settings in this process. "
                         "See docs/operations.md.")
    web.add_argument("--data-dir", metavar="DIR", help="as for `brain serve`")
    web.add_argument("--listen", metavar="HOST:PORT", help="as for `brain serve`")
    web.add_argument("--gunicorn-config", metavar="PATH", help="as for `brain serve`")
    add_chat_parser(sub)
    add_trace_parser(sub)
    add_agentloop_parser(sub)
    add_replay_parser(sub)
    add_mcp_parser(sub)
    sub.add_parser("journal", help="verify or dump a session journal", add_help=False)
    settings = sub.add_parser("settings", help="print the BRAIN_* settings table")
    settings.add_argument("--markdown", action="store_true",
                          help="Markdown, as in docs/configuration.md (also the default)")

    if argv and argv[0] == "journal":
        from brain.journal.cli import main as journal_main

        return journal_main(argv[1:])
    args = parser.parse_args(argv)
    if getattr(args, "data_dir", None):
        os.environ["BRAIN_DATA_DIR"] = args.data_dir
    if getattr(args, "listen", None):
        os.environ["BRAIN_LISTEN"] = args.listen
    if args.command == "actors":
        from brain.services import run_actors

        return run_actors()
    if args.command == "web":
        from brain.services import run_web

        return run_web(args.gunicorn_config)
    if args.command == "serve":
        from brain.supervisor import serve as run_serve

        return run_serve(args.gunicorn_config)
    if args.command == "chat":
        from brain.chat.command import run as run_chat

        return run_chat(args)
    if args.command == "agentloop":
        from brain.agentloop.command import run as run_agentloop

        return run_agentloop(args)
    if args.command == "trace":
        from brain.tracing.command import run as run_trace

        return run_trace(args)
    if args.command == "replay":
        from brain.replayer.command import run as run_replay

        return run_replay(args)
    if args.command == "mcp":
        from brain.config import BrainConfig
        from brain.errors import ConfigError
        from brain.settings import Settings
        from brain.tools.mcp.command import run as run_mcp

        try:
            config = BrainConfig.load(Settings.from_env().config)
        except ConfigError as exc:
            print(f"brain mcp: {exc}", file=sys.stderr)
            return 2
        return run_mcp(args, config.mcp_servers)
    if args.command == "settings":
        from brain.settings import markdown_table

        print(markdown_table(), end="")
        return 0
    parser.error(f"unknown command {args.command}")
    return 2


if __name__ == "__main__":
    sys.exit(main())
