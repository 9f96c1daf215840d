"""Python Agentloops (components) against the C ones (core modules), in the same run.

    python -m tools.bench.python_agentloop [--turns-per-block 10] [--blocks 3] [--sessions 16]

1. Build: `brain agentloop build` of the Python default loop, cold (≤ 15 s wanted); its compile
   (`brain serve` does it once at start); and loading the stored artifact in a fresh process,
   as a restarted server's actor does (≤ 0.5 s wanted).
2. Per activation, in this process (the real AgentloopRuntime, a fresh Store and instance
   each time): a trivial activation (no guest call) of a Python component beside the C-ABI
   module doing the same (p50 ≤ 5 ms wanted); then each default loop answering one text turn
   (four guest calls). Memory per resident instance: the process's PSS growth per instance
   while 16 instances are held at once.
3. The 16-session text turn on a real `brain serve` (scripted instant model): C default and
   Python default sessions on one server, driven in alternating blocks (C, Python, C, ...),
   so a swing of this machine's CPU speed reaches both; turns/s of each and the ratio (≥ 0.9x
   wanted).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import wasmtime

from brain.agentloop import DEFAULT_AGENTLOOP, AgentloopRuntime
from brain.agentloop.build import build
from brain.agentloop.precompile import precompile
from tests.support.server import BrainServer
from tools.bench.agentloop import CONSTANT_WAT, PAYLOAD, ScriptedTurn
from tools.bench.common import loadavg, pss_kib
from tools.bench.turns import concurrent_turns, settle

ROOT = Path(__file__).resolve().parents[2]
PYTHON_DEFAULT = ROOT / "agentloops" / "python" / "default_loop.py"
PONG = Path(__file__).with_name("python_loops") / "pong.py"
RESIDENT_INSTANCES = 16

LOAD_SNIPPET = """
import sys, time
started = time.perf_counter()
from brain.agentloop.engine import current_engine
current_engine().modules.get(sys.argv[1], sys.argv[2])
print(time.perf_counter() - started)
"""


def p50_ms(fn: Callable[[], Any], iterations: int) -> float:
    for _ in range(max(5, iterations // 10)):
        fn()
    samples = []
    for _ in range(iterations):
        started = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


def resident_kib(store_instance: Callable[[], Any]) -> float:
    """PSS growth of this process per instance while RESIDENT_INSTANCES are held."""
    import os

    store_instance()  # anything made once per process is made before counting
    before = pss_kib(os.getpid())
    held = [store_instance() for _ in range(RESIDENT_INSTANCES)]
    grown = pss_kib(os.getpid()) - before
    del held
    return grown / RESIDENT_INSTANCES


def build_section(tmp: Path) -> tuple[Path, Path]:
    started = time.monotonic()
    built = build(PYTHON_DEFAULT, tmp / "default_loop.wasm")
    print(f"cold build of {PYTHON_DEFAULT.name}: {time.monotonic() - started:.1f} s "
          f"({built.size / 1e6:.1f} MB)  [target <= 15 s]")
    pong = build(PONG, tmp / "pong.wasm").output
    cache = tmp / "cache"
    cache.mkdir()
    [compiled] = precompile([str(built.output)], cache)
    precompile([str(pong)], cache)
    print(f"compile at start (all CPUs, once per file and wasmtime): {compiled.seconds:.1f} s")
    loads = [float(subprocess.run([sys.executable, "-c", LOAD_SNIPPET, str(built.output),
                                   str(cache)], capture_output=True, text=True, check=True,
                                  cwd=ROOT).stdout) for _ in range(3)]
    print(f"restart: load of the stored artifact in a fresh process: "
          f"{statistics.median(loads) * 1000:.0f} ms (median of 3)  [target <= 500 ms]")
    return built.output, pong


def activation_section(tmp: Path, python_default: Path, pong: Path, iterations: int) -> None:
    runtime = AgentloopRuntime(cache_dir=tmp / "cache")
    constant = tmp / "constant.wasm"
    constant.write_bytes(wasmtime.wat2wasm(CONSTANT_WAT))
    for path in (constant, pong, DEFAULT_AGENTLOOP, python_default):
        runtime.prepare(path)

    def trivial(path: Path) -> Callable[[], Any]:
        return lambda: runtime.activate(path, PAYLOAD, ScriptedTurn(), None)

    c_trivial = p50_ms(trivial(constant), iterations)
    py_trivial = p50_ms(trivial(pong), iterations)
    c_turn = p50_ms(trivial(DEFAULT_AGENTLOOP), iterations)
    py_turn = p50_ms(trivial(python_default), iterations)
    print(f"per activation, p50 of {iterations}:   {'C (core module)':>16} {'Python':>10}")
    print(f"  fresh instance + trivial activation {c_trivial:13.3f} ms {py_trivial:7.2f} ms"
          f"  [Python target <= 5 ms]")
    print(f"  default loop, one text turn (4 calls) {c_turn:11.3f} ms {py_turn:7.2f} ms")

    from brain.agentloop.engine import current_engine

    process = current_engine()
    modules = process.modules

    def hold_c() -> Any:
        store = wasmtime.Store(process.engine)
        store.set_epoch_deadline(1 << 40)
        return store, modules.get(DEFAULT_AGENTLOOP).pre.instantiate(store)

    def hold_python() -> Any:
        """An instance of the trivial Python loop after one activation (its pages touched)."""
        store = wasmtime.Store(process.engine)
        store.set_epoch_deadline(1 << 40)
        component = modules.get(pong, str(tmp / "cache")).component
        instance = process.component_linker.instantiate(store, component)
        entry = instance.get_func(store, "activate")
        entry(store, json.dumps(PAYLOAD))
        entry.post_return(store)
        return store, instance

    print(f"memory per resident instance (PSS, {RESIDENT_INSTANCES} held): "
          f"C {resident_kib(hold_c):,.0f} KiB, Python {resident_kib(hold_python):,.0f} KiB")


def throughput_section(tmp: Path, python_default: Path, sessions: int, per_block: int,
                       blocks: int) -> None:
    config = tmp / "brain.toml"
    config.write_text(f'[agentloops.py_default]\npath = "{python_default}"\n')
    data = tmp / "data"
    server = BrainServer(data, env={"BRAIN_CONFIG": str(config)}).start()
    rates: dict[str, list[float]] = {"C": [], "Python": []}
    try:
        ids = {"C": [server.create_session()["id"] for _ in range(sessions)],
               "Python": [server.create_session(agentloop="py_default")["id"]
                          for _ in range(sessions)]}
        for arm in ("C", "Python"):
            settle(server, ids[arm])
        for _ in range(blocks):
            for arm in ("C", "Python"):
                run = concurrent_turns(server, ids[arm], per_block, time.monotonic() + 600)
                if run.errors or run.hung:
                    raise SystemExit(f"{arm} block failed: {run.errors[:1]} {run.hung[:1]}")
                rates[arm].append(run.rate)
    finally:
        server.kill()
    c, py = statistics.median(rates["C"]), statistics.median(rates["Python"])
    print(f"text turns, {sessions} sessions x {per_block} turns per block, {blocks} blocks "
          f"each, alternating:")
    print(f"  C default      {c:7.1f} turns/s  (blocks: "
          f"{', '.join(f'{r:.1f}' for r in rates['C'])})")
    print(f"  Python default {py:7.1f} turns/s  (blocks: "
          f"{', '.join(f'{r:.1f}' for r in rates['Python'])})")
    print(f"  Python / C: {py / c:.2f}x  [target >= 0.9x]")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=300)
    parser.add_argument("--sessions", type=int, default=16)
    parser.add_argument("--turns-per-block", type=int, default=10)
    parser.add_argument("--blocks", type=int, default=3)
    args = parser.parse_args()
    print(f"before: {loadavg()}")
    with tempfile.TemporaryDirectory(prefix="brain-bench-pyloop-") as name:
        tmp = Path(name)
        python_default, pong = build_section(tmp)
        activation_section(tmp, python_default, pong, args.iterations)
        throughput_section(tmp, python_default, args.sessions, args.turns_per_block,
                           args.blocks)
    print(f"after: {loadavg()}")


if __name__ == "__main__":
    main()
