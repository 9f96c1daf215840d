"""`brain agentloop build LOOP.py -o LOOP.wasm` and `brain agentloop check FILE.wasm`."""

from __future__ import annotations

import argparse
import hashlib
import sys
import time
from pathlib import Path

DESCRIPTION = """\
build: build a Python Agentloop (a module defining activate(turn), written with brain_guest)
       into a Wasm component, and compile it into this machine's cache (BRAIN_AGENTLOOP_CACHE)
       so that `brain serve` and `brain replay` only map it; needs componentize-py, the
       `agentloop` extra (from a checkout: pip install -e '.[agentloop]').
check: say what kind of Agentloop a .wasm file is (a core module on the C ABI, or a component
       on the brain:agentloop world) and whether Brain can run it; exit 1 if not."""


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    loop = sub.add_parser("agentloop", help="build or check an Agentloop",
                          description=DESCRIPTION,
                          formatter_class=argparse.RawDescriptionHelpFormatter)
    actions = loop.add_subparsers(dest="agentloop_command", required=True)
    build = actions.add_parser("build", help="build a Python Agentloop into a component")
    build.add_argument("loop", type=Path, help="the loop's Python file, e.g. loop.py")
    build.add_argument("-o", "--output", type=Path,
                       help="the component to write (default: LOOP.wasm beside LOOP.py)")
    check = actions.add_parser("check", help="say what an Agentloop file is and if it fits")
    check.add_argument("file", type=Path, help="a .wasm Agentloop")


def run(args: argparse.Namespace) -> int:
    if args.agentloop_command == "build":
        return _build(args.loop, args.output or args.loop.with_suffix(".wasm"))
    return _check(args.file)


def _build(loop: Path, output: Path) -> int:
    from brain.agentloop.build import BuildError, build

    try:
        built = build(loop, output)
    except BuildError as exc:
        print(f"brain agentloop build: {exc}", file=sys.stderr)
        return 1
    print(f"built {built.output} ({built.size / 1e6:.1f} MB) in {built.seconds:.1f} s",
          flush=True)
    # Compiled now, into the machine's cache, so `brain serve`, `check` and `replay` only map
    # it (brain/agentloop/compile_cache.py).
    from brain.agentloop.compile_cache import ready_cache_dir
    from brain.agentloop.precompile import precompile

    [compiled] = precompile([str(built.output)], ready_cache_dir())
    if compiled.action.startswith("refused"):
        print(f"brain agentloop build: {built.output}: {compiled.action}", file=sys.stderr)
        return 1
    print(f"{built.output}: compiled and checked ({compiled.action}, "
          f"{compiled.seconds:.1f} s); `brain serve` and `brain replay` will not compile it again")
    return 0


def _check(path: Path) -> int:
    import wasmtime

    from brain.agentloop.compile_cache import ready_cache_dir
    from brain.agentloop.components import WORLD, world_problems
    from brain.agentloop.engine import engine_config
    from brain.agentloop.errors import AgentloopError
    from brain.agentloop.kinds import COMPONENT, CORE_MODULE, describe_header, guest_kind
    from brain.agentloop.modules import cached_component, check_abi

    try:
        data = path.read_bytes()
    except OSError as exc:
        print(f"brain agentloop check: cannot read {path}: {exc.strerror}", file=sys.stderr)
        return 1
    kind = guest_kind(data)
    sha = hashlib.sha256(data).hexdigest()
    if kind is None:
        print(f"{path}: not an Agentloop: {describe_header(data)}")
        return 1
    engine = wasmtime.Engine(engine_config(parallel_compilation=True))
    started = time.monotonic()
    action = "compiled"
    try:
        if kind == CORE_MODULE:
            module = wasmtime.Module(engine, data)
            check_abi(module, str(path))
            fits = "fits the core-module ABI (brain_activate, brain_alloc, memory; brain.call)"
        else:
            component, action, _ = cached_component(engine, data, str(path),
                                                    str(ready_cache_dir()), sha)
            problems = world_problems(engine, component)
            if problems:
                raise AgentloopError("agentloop_error", "; ".join(problems))
            fits = f"fits the world {WORLD} (imports host, exports activate)"
    except wasmtime.WasmtimeError as exc:
        print(f"{path}: a {kind} that does not compile: {str(exc).splitlines()[0]}")
        return 1
    except AgentloopError as exc:
        print(f"{path}: a {kind} that Brain cannot run: {exc.message}")
        return 1
    seconds = time.monotonic() - started
    label = "component" if kind == COMPONENT else "core module"
    how = "found compiled in the machine's cache" if action == "cached" else "compiled"
    print(f"{path}: a {label}, {len(data) / 1e6:.1f} MB, sha256 {sha[:16]}…; {fits}; "
          f"{how} in {seconds:.1f} s")
    return 0
