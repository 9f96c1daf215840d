"""Compile Agentloop components into the machine's cache: `python -m
brain.agentloop.precompile --cache-dir DIR [--status FILE] FILE...`.

A component built from Python compiles in seconds, too long for a turn to wait. `brain serve`
runs this at start, in a process of its own and in the background (its /readyz names what it
is still compiling, brain/agentloop/preparing.py); `brain replay` runs it before a replay.
It compiles with all CPUs (parallel compilation), which a forked actor process must never do
(stack hazard 4), and then exits, so no Engine lives in a process that forks; several
components are compiled at once, so the CPUs stay busy through each one's serial parts. Each
is stored in the cache (brain/agentloop/compile_cache.py) under its sha256 and the wasmtime
version; actors map that file in milliseconds. A component already stored is not compiled
again, so a restart costs only the check.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from brain.agentloop.kinds import COMPONENT, guest_kind
from brain.agentloop.preparing import clear_status, write_status
from brain.durable_dirs import make_dirs_durable


@dataclass(frozen=True)
class Precompiled:
    path: str
    action: str  # "compiled", "cached", or "refused: <why>"
    seconds: float


def needs_compiling(paths: list[str], cache_dir: Path) -> list[str]:
    """The component files among `paths` without a whole stored artifact (core modules
    compile in milliseconds where they are used and are left out). Reads headers, hashes and
    the CRC of each stored artifact: one torn by a power cut is compiled here, at start, not
    by the first actor that needs it."""
    from brain.agentloop.artifacts import why_not_whole
    from brain.agentloop.components import artifact_name

    wanted = []
    for path in paths:
        try:
            data = Path(path).read_bytes()
        except OSError:
            continue
        if guest_kind(data) != COMPONENT:
            continue
        stored = cache_dir / artifact_name(hashlib.sha256(data).hexdigest())
        if not stored.is_file() or why_not_whole(stored) is not None:
            wanted.append(path)
    return wanted


def precompile(paths: list[str], cache_dir: Path, status: Path | None = None,
               workers: int | None = None) -> list[Precompiled]:
    """Compile, check and store each component of `paths` not stored yet, several at once
    (`workers`, default: the CPUs, at most one per file), each compile itself using every CPU.
    `status`, when given, is kept listing what is still being prepared (preparing.py)."""
    import wasmtime

    from brain.agentloop.engine import engine_config

    engine = wasmtime.Engine(engine_config(parallel_compilation=True))
    components = [path for path in paths if _is_component(path)]
    pending = list(components)
    lock = threading.Lock()

    def note_done(path: str) -> None:
        with lock:
            pending.remove(path)
            if status is not None:
                write_status(status, pending)

    if status is not None:
        write_status(status, pending)
    count = max(1, min(len(components), workers or os.cpu_count() or 1))
    with ThreadPoolExecutor(count, thread_name_prefix="precompile") as pool:
        done = list(pool.map(lambda path: _one(engine, path, cache_dir, note_done), components))
    return done


def _is_component(path: str) -> bool:
    try:
        with open(path, "rb") as source:
            return guest_kind(source.read(8)) == COMPONENT
    except OSError:
        return False


def _one(engine: object, path: str, cache_dir: Path, note_done: Callable[[str], None]
         ) -> Precompiled:
    from brain.agentloop.components import check_world
    from brain.agentloop.errors import AgentloopError
    from brain.agentloop.modules import cached_component

    started = time.monotonic()
    try:
        data = Path(path).read_bytes()
        component, action, _ = cached_component(engine, data, path, str(cache_dir))  # type: ignore[arg-type]
        check_world(engine, component, path)  # type: ignore[arg-type]
    except AgentloopError as exc:
        return Precompiled(path, f"refused: {exc.message}", time.monotonic() - started)
    except OSError as exc:
        return Precompiled(path, f"refused: cannot read it ({exc.strerror})",
                           time.monotonic() - started)
    finally:
        note_done(path)
    return Precompiled(path, action, time.monotonic() - started)


def precompile_in_child(paths: list[str], cache_dir: Path, timeout: float = 600.0) -> str:
    """Compile in a child process (all CPUs, which a process that forks must not use: stack
    hazard 4) when any component needs it, and wait. Its announcements go to this process's
    stderr as they happen; returns its summary lines."""
    import subprocess

    wanted = needs_compiling(paths, cache_dir)
    if not wanted:
        return ""
    done = subprocess.run(child_command(wanted, cache_dir), stdout=subprocess.PIPE, text=True,
                          timeout=timeout)
    return done.stdout.strip()


def child_command(paths: list[str], cache_dir: Path, status: Path | None = None) -> list[str]:
    """The argv of a precompile child (-P: nothing of the working directory shadows Brain)."""
    command = [sys.executable, "-P", "-m", "brain.agentloop.precompile", "--cache-dir",
               str(cache_dir)]
    if status is not None:
        command += ["--status", str(status)]
    return [*command, *paths]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m brain.agentloop.precompile")
    parser.add_argument("--cache-dir", required=True, type=Path)
    parser.add_argument("--status", type=Path,
                        help="a file kept listing what is still being compiled, removed at "
                             "the end")
    parser.add_argument("files", nargs="+")
    args = parser.parse_args(argv)
    make_dirs_durable(args.cache_dir)
    refused = 0
    try:
        for item in precompile(args.files, args.cache_dir, args.status):
            print(f"{item.action} {item.path} ({item.seconds:.2f} s)", flush=True)
            refused += item.action.startswith("refused")
    finally:
        if args.status is not None:
            clear_status(args.status)
    return 1 if refused else 0


if __name__ == "__main__":
    sys.exit(main())
