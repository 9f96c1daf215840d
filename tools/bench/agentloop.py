"""Agentloop activation overhead, measured against a pure-Python baseline in the same run.

    python tools/bench/agentloop.py [--iterations N]

What an activation costs Brain beyond the work itself: a fresh Store and Instance, copying the
payload in, one brain.call round trip (request out, host function, result in) and the result
out. The baseline does the same JSON encoding and decoding with a plain Python function call,
so the ratio is the price of isolation. Also shown: the same guest with no guest call, and the
shipped default loop answering one text turn (four guest calls).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path
from typing import Any

import wasmtime

from brain.agentloop import DEFAULT_AGENTLOOP, AgentloopRuntime
from brain.agentloop.runtime import check_result

# brain_activate forwards the payload as the request and returns the host's result as its own.
RELAY_WAT = """(module
  (import "brain" "call" (func $call (param i32 i32) (result i64)))
  (memory (export "memory") 1)
  (global $top (mut i32) (i32.const 1024))
  (func (export "brain_alloc") (param $n i32) (result i32)
    (local $p i32)
    (local.set $p (global.get $top))
    (global.set $top (i32.add (global.get $top) (local.get $n)))
    (local.get $p))
  (func (export "brain_activate") (param $ptr i32) (param $len i32) (result i64)
    (call $call (local.get $ptr) (local.get $len))))"""

# Returns a constant result without calling the host.
CONSTANT_WAT = """(module
  (import "brain" "call" (func $call (param i32 i32) (result i64)))
  (memory (export "memory") 1)
  (data (i32.const 16) "{\\"status\\":\\"completed\\",\\"output\\":\\"pong\\"}")
  (func (export "brain_alloc") (param $n i32) (result i32) (i32.const 1024))
  (func (export "brain_activate") (param $ptr i32) (param $len i32) (result i64)
    (i64.const 0x1000000026)))"""

PAYLOAD = {
    "op": "bench",
    "kind": "turn",
    "session_id": "01JBENCH0000000000000000",
    "turn": 7,
    "input": "What is the capital of France?",
    "limits": {"max_model_calls": 128, "max_turn_secs": 1800},
}
RESULT = {"status": "completed", "output": "pong"}


def guest_call(request: dict[str, Any]) -> dict[str, Any]:
    return RESULT


def baseline() -> dict[str, Any]:
    """The same JSON work as the relay activation, as plain Python calls."""
    request = json.loads(json.dumps(PAYLOAD, ensure_ascii=False, separators=(",", ":")))
    result = guest_call(request)
    return check_result(json.loads(json.dumps(result, separators=(",", ":"))))


class ScriptedTurn:
    """Just enough of Brain to answer one text turn of the default loop."""

    def __init__(self) -> None:
        self.messages: list[Any] = []

    def __call__(self, request: dict[str, Any]) -> dict[str, Any]:
        op = request["op"]
        if op == "transcript.read":
            return {"messages": self.messages, "through_sequence": 3}
        if op == "transcript.set":
            self.messages = request["messages"]
            return {"sequence": 4}
        message = {"role": "assistant", "content": [{"type": "text", "text": "Paris."}]}
        return {"message": message, "stop_reason": "end_turn", "usage": {}}


def measure(fn: Callable[[], Any], iterations: int, rounds: int = 5) -> tuple[float, float]:
    """Median over rounds of the mean wall and CPU time per call, in microseconds.

    CPU time (time.process_time) is shown beside wall time because a busy machine inflates
    wall time with time spent descheduled.
    """
    for _ in range(max(10, iterations // 10)):
        fn()
    walls, cpus = [], []
    for _ in range(rounds):
        wall, cpu = time.perf_counter(), time.process_time()
        for _ in range(iterations):
            fn()
        walls.append((time.perf_counter() - wall) / iterations * 1e6)
        cpus.append((time.process_time() - cpu) / iterations * 1e6)
    return statistics.median(walls), statistics.median(cpus)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=2000)
    args = parser.parse_args()
    runtime = AgentloopRuntime()
    with tempfile.TemporaryDirectory() as tmp:
        relay = Path(tmp) / "relay.wasm"
        relay.write_bytes(wasmtime.wat2wasm(RELAY_WAT))
        constant = Path(tmp) / "constant.wasm"
        constant.write_bytes(wasmtime.wat2wasm(CONSTANT_WAT))
        assert runtime.activate(relay, PAYLOAD, guest_call, None) == RESULT
        assert runtime.activate(constant, PAYLOAD, guest_call, None) == RESULT
        assert baseline() == RESULT

        n = args.iterations
        base = measure(baseline, n)
        rows = [
            ("baseline: Python call, same JSON work", base),
            (
                "activation, one guest call",
                measure(
                    lambda: runtime.activate(relay, PAYLOAD, guest_call, time.monotonic() + 60), n
                ),
            ),
            (
                "activation, no guest call",
                measure(lambda: runtime.activate(constant, PAYLOAD, guest_call, None), n),
            ),
            (
                "default loop, one text turn (4 guest calls)",
                measure(
                    lambda: runtime.activate(DEFAULT_AGENTLOOP, PAYLOAD, ScriptedTurn(), None),
                    max(1, n // 4),
                ),
            ),
        ]
    print(f"wasmtime-py {version('wasmtime')}, {n} iterations, median of 5 rounds")
    print(f"{'':<44} {'wall':>9}    {'cpu':>9}    {'ratio (wall, cpu)':>17}")
    for name, (wall, cpu) in rows:
        ratios = f"x{wall / base[0]:6.1f}  x{cpu / base[1]:6.1f}"
        print(f"{name:<44} {wall:9.1f} us {cpu:9.1f} us   {ratios}")


if __name__ == "__main__":
    main()
