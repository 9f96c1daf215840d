"""Compile the configured Agentloop components before Brain serves: `python -m
brain.agentloop.precompile --cache-dir DIR FILE...`.

A component built from Python compiles in seconds, too long for a turn to wait. `brain serve`
runs this once at start, in a process of its own: it compiles with all CPUs (parallel
compilation), which a forked actor process must never do (stack hazard 4), and then exits,
so no Engine lives in a process that forks. Each component is stored serialized in the cache
directory under its sha256 and the wasmtime version; actors map that file in milliseconds. A
component already stored is not compiled again, so a restart costs only the check.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from brain.agentloop.kinds import COMPONENT, guest_kind
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


def precompile(paths: list[str], cache_dir: Path) -> list[Precompiled]:
    """Compile, check and store each component of `paths` that is not stored yet."""
    import wasmtime

    from brain.agentloop.components import (
        artifact_name,
        check_world,
        compile_component,
        load_artifact,
    )
    from brain.agentloop.engine import engine_config
    from brain.agentloop.errors import AgentloopError
    from brain.agentloop.modules import store_serialized

    engine = wasmtime.Engine(engine_config(parallel_compilation=True))
    done = []
    for path in paths:
        started = time.monotonic()
        data = Path(path).read_bytes()
        if guest_kind(data) != COMPONENT:
            continue
        name = artifact_name(hashlib.sha256(data).hexdigest())
        try:
            component = load_artifact(engine, cache_dir / name)
            action = "cached"
            if component is None:
                component = compile_component(engine, data, path)
                action = "compiled"
            check_world(engine, component, path)
        except AgentloopError as exc:
            done.append(Precompiled(path, f"refused: {exc.message}", time.monotonic() - started))
            continue
        if action == "compiled":
            store_serialized(component, str(cache_dir), name)
        done.append(Precompiled(path, action, time.monotonic() - started))
    return done


def precompile_in_child(paths: list[str], cache_dir: Path, timeout: float = 600.0) -> str:
    """Run the compile in a child process when any component needs it; what it printed."""
    import subprocess

    wanted = needs_compiling(paths, cache_dir)
    if not wanted:
        return ""
    done = subprocess.run([sys.executable, "-P", "-m", "brain.agentloop.precompile", "--cache-dir",
                           str(cache_dir), *wanted], capture_output=True, text=True,
                          timeout=timeout)
    return (done.stdout + done.stderr).strip()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m brain.agentloop.precompile")
    parser.add_argument("--cache-dir", required=True, type=Path)
    parser.add_argument("files", nargs="+")
    args = parser.parse_args(argv)
    make_dirs_durable(args.cache_dir)
    refused = 0
    for item in precompile(args.files, args.cache_dir):
        print(f"{item.action} {item.path} ({item.seconds:.2f} s)", flush=True)
        refused += item.action.startswith("refused")
    return 1 if refused else 0


if __name__ == "__main__":
    sys.exit(main())
