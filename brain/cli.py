"""The `brain` command: `serve`, `journal verify|dump`, `settings`."""

from __future__ import annotations

import argparse
import os
import sys


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(prog="brain", description="Durable sessions for AI agents.")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="run Brain (actors + HTTP) on this machine")
    serve.add_argument("--data-dir", help="overrides BRAIN_DATA_DIR")
    serve.add_argument("--listen", help="overrides BRAIN_LISTEN (HOST:PORT)")
    serve.add_argument("--gunicorn-config", metavar="PATH",
                       help="a gunicorn settings file (start from conf/gunicorn.conf.py); "
                            "default: the settings shipped with Brain")
    sub.add_parser("journal", help="verify or dump a session journal", add_help=False)
    settings = sub.add_parser("settings", help="print the BRAIN_* settings table")
    settings.add_argument("--markdown", action="store_true")

    if argv and argv[0] == "journal":
        from brain.journal.cli import main as journal_main

        return journal_main(argv[1:])
    args = parser.parse_args(argv)
    if args.command == "serve":
        if args.data_dir:
            os.environ["BRAIN_DATA_DIR"] = args.data_dir
        if args.listen:
            os.environ["BRAIN_LISTEN"] = args.listen
        from brain.supervisor import serve as run_serve

        return run_serve(args.gunicorn_config)
    if args.command == "settings":
        from brain.settings import markdown_table

        print(markdown_table(), end="")
        return 0
    parser.error(f"unknown command {args.command}")
    return 2


if __name__ == "__main__":
    sys.exit(main())
