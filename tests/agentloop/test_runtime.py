"""The host side of the ABI against hand-written guests, including hostile ones.

Every failure must surface as AgentloopError with a message that helps the loop's author,
never as a crash, a hang or a wrong-but-plausible result.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from pathlib import Path

import pytest
import wasmtime

from brain.agentloop import AgentloopError, AgentloopRuntime, load_module_info
from tests.agentloop.helpers import FakeBrain, compile_guest, send_const_guest, wat_string

OK = {"status": "completed", "output": "ok"}


@pytest.fixture
def runtime() -> AgentloopRuntime:
    return AgentloopRuntime(memory_limit_bytes=8 << 20, max_payload_bytes=64 << 10)


def activate(runtime: AgentloopRuntime, path: Path, request: dict, host=None, deadline=10.0):
    """Run a guest; `request` is the activation payload (the relay guest sends it as is)."""
    host = host or FakeBrain()
    limit = None if deadline is None else time.monotonic() + deadline
    return runtime.activate(path, request, host, limit)


def expect_error(code: str, fn, *args, **kwargs) -> str:
    with pytest.raises(AgentloopError) as info:
        fn(*args, **kwargs)
    assert info.value.code == code, info.value.message
    return info.value.message


# --- guest calls through the relay guest ---------------------------------------------------


def test_relay_round_trip(runtime: AgentloopRuntime, tmp_path: Path) -> None:
    relay = compile_guest("relay", tmp_path)
    brain = FakeBrain()
    brain.kv["k"] = {"nested": ["é", None]}
    result = activate(runtime, relay, {"op": "kv.read", "key": "k"}, brain)
    assert result == {
        "status": "completed",
        "output": {"found": True, "value": {"nested": ["é", None]}},
    }
    assert brain.requests == [{"op": "kv.read", "key": "k"}]


def test_guest_call_that_raises_gives_internal_error(
    runtime: AgentloopRuntime, tmp_path: Path
) -> None:
    def host(request: dict) -> dict:
        raise RuntimeError("secret detail")

    result = activate(runtime, compile_guest("relay", tmp_path), {"op": "model.call"}, host)
    error = result["output"]["error"]
    assert error["code"] == "internal"
    assert "secret" not in error["message"]


def test_guest_call_returning_non_json_gives_internal_error(
    runtime: AgentloopRuntime, tmp_path: Path
) -> None:
    result = activate(
        runtime, compile_guest("relay", tmp_path), {"op": "x"}, lambda request: {"value": object()}
    )
    assert result["output"]["error"]["code"] == "internal"


def test_guest_call_may_end_the_activation(runtime: AgentloopRuntime, tmp_path: Path) -> None:
    def host(request: dict) -> dict:
        raise AgentloopError("turn_timeout", "cancelled by the host")

    message = expect_error(
        "turn_timeout",
        activate,
        runtime,
        compile_guest("relay", tmp_path),
        {"op": "model.call"},
        host,
    )
    assert message == "cancelled by the host"


@pytest.mark.parametrize(
    "request_bytes, why",
    [
        (b"not json", "not UTF-8 JSON"),
        (b"\xff\xfe{}", "not UTF-8 JSON"),
        (b"[1, 2]", "JSON object"),
        (b'{"key": "k"}', "no string `op`"),
        (b'{"op": 3}', "no string `op`"),
        (b'{"op": "x", "v": NaN}', "not UTF-8 JSON"),
    ],
)
def test_malformed_request_gets_invalid_request(
    runtime: AgentloopRuntime, tmp_path: Path, request_bytes: bytes, why: str
) -> None:
    brain = FakeBrain()
    result = activate(runtime, send_const_guest(request_bytes, tmp_path), {}, brain)
    error = result["output"]["error"]
    assert error["code"] == "invalid_request"
    assert why in error["message"]
    assert brain.requests == []


def test_oversized_request_fails_the_call_only(tmp_path: Path) -> None:
    runtime = AgentloopRuntime(max_payload_bytes=1024)
    big = json.dumps({"op": "events.emit", "kind": "x", "data": "y" * 2000}).encode()
    brain = FakeBrain()
    result = activate(runtime, send_const_guest(big, tmp_path), {}, brain)
    assert result["output"]["error"]["code"] == "payload_too_large"
    assert brain.requests == []


def test_oversized_result_is_refused(tmp_path: Path) -> None:
    runtime = AgentloopRuntime(max_payload_bytes=1024)
    result = activate(
        runtime,
        compile_guest("relay", tmp_path),
        {"op": "transcript.read"},
        lambda request: {"messages": ["z" * 5000]},
    )
    error = result["output"]["error"]
    assert error["code"] == "payload_too_large"
    assert "transcript.read" in error["message"]


def test_oversized_activation_payload_is_refused(tmp_path: Path) -> None:
    runtime = AgentloopRuntime(max_payload_bytes=1024)
    message = expect_error(
        "agentloop_error",
        activate,
        runtime,
        compile_guest("relay", tmp_path),
        {"op": "x", "pad": "p" * 2000},
    )
    assert "payload" in message


# --- rogue guests ---------------------------------------------------------------------------


def test_infinite_loop_stops_at_the_deadline(runtime: AgentloopRuntime, tmp_path: Path) -> None:
    start = time.monotonic()
    expect_error(
        "turn_timeout", activate, runtime, compile_guest("spin", tmp_path), {}, deadline=0.3
    )
    elapsed = time.monotonic() - start
    assert 0.3 <= elapsed < 2.0


def test_guest_call_loop_stops_at_the_overall_deadline(
    runtime: AgentloopRuntime, tmp_path: Path
) -> None:
    brain = FakeBrain()
    start = time.monotonic()
    message = expect_error(
        "turn_timeout",
        activate,
        runtime,
        compile_guest("call_forever", tmp_path),
        {},
        brain,
        deadline=0.3,
    )
    assert 0.3 <= time.monotonic() - start < 2.0
    assert len(brain.requests) > 10  # it really was looping through the host
    # Caught either at a guest call's deadline check or by the epoch between two calls,
    # whichever the machine's speed makes come first; both are the overall deadline.
    assert "turn deadline" in message, message


def test_slow_host_call_past_the_deadline_times_out(
    runtime: AgentloopRuntime, tmp_path: Path
) -> None:
    def slow(request: dict) -> dict:
        time.sleep(0.3)
        return {}

    expect_error(
        "turn_timeout",
        activate,
        runtime,
        compile_guest("relay", tmp_path),
        {"op": "model.call"},
        slow,
        deadline=0.1,
    )


def test_slow_host_call_within_the_deadline_rearms_the_epoch(
    runtime: AgentloopRuntime, tmp_path: Path
) -> None:
    """Epochs count time spent in the host; a long guest call must not kill the guest after."""

    def slow(request: dict) -> dict:
        time.sleep(0.25)
        return {"done": True}

    result = activate(
        runtime, compile_guest("relay", tmp_path), {"op": "model.call"}, slow, deadline=0.6
    )
    assert result["output"] == {"done": True}


def test_deadline_already_passed(runtime: AgentloopRuntime, tmp_path: Path) -> None:
    expect_error(
        "turn_timeout", activate, runtime, compile_guest("relay", tmp_path), {}, deadline=-1.0
    )


def test_no_deadline(runtime: AgentloopRuntime, tmp_path: Path) -> None:
    result = activate(
        runtime, compile_guest("relay", tmp_path), {"op": "telemetry.record"}, deadline=None
    )
    assert result == {"status": "completed", "output": {}}


def test_memory_hog_fails_with_the_limit_named(runtime: AgentloopRuntime, tmp_path: Path) -> None:
    message = expect_error(
        "agentloop_error", activate, runtime, compile_guest("memory_hog", tmp_path), {}
    )
    assert "trapped" in message
    assert f"limit of {8 << 20}" in message


def test_guest_out_of_memory_for_a_host_result(runtime: AgentloopRuntime, tmp_path: Path) -> None:
    message = expect_error(
        "agentloop_error", activate, runtime, compile_guest("alloc_hog", tmp_path), {}
    )
    assert "brain_alloc" in message and "out of memory" in message
    assert "transcript.read" in message


def test_initial_memory_over_the_limit(tmp_path: Path) -> None:
    runtime = AgentloopRuntime(memory_limit_bytes=1 << 20)
    hungry = tmp_path / "hungry.wasm"
    hungry.write_bytes(
        wasmtime.wat2wasm(
            '(module (import "brain" "call" (func (param i32 i32) (result i64)))'
            ' (memory (export "memory") 32)'
            ' (func (export "brain_alloc") (param i32) (result i32) (i32.const 0))'
            ' (func (export "brain_activate") (param i32 i32) (result i64) (i64.const 0)))'
        )
    )
    message = expect_error("agentloop_error", activate, runtime, hungry, {})
    assert "could not run" in message


@pytest.mark.parametrize(
    "ptr, length",
    [(0x7FFF0000, 16), (-1, 16), (0, 0x10000 + 1), (0xFFF0, 0x20), (-16, 8)],
)
def test_garbage_pointer_in_brain_call(
    runtime: AgentloopRuntime, tmp_path: Path, ptr: int, length: int
) -> None:
    brain = FakeBrain()
    guest = compile_guest("call_pointer", tmp_path, ptr=ptr, len=length)
    message = expect_error("agentloop_error", activate, runtime, guest, {}, brain)
    assert message.startswith("brain.call: request pointer 0x")
    assert "outside guest memory of" in message
    assert brain.requests == []


@pytest.mark.parametrize(
    "packed, why",
    [
        ((0xFFFF0000 << 32) | 16, "brain_activate: result pointer 0xffff0000 + len 16 outside"),
        ((0xFFF8 << 32) | 16, "outside guest memory of 65536 bytes"),
        ((0 << 32) | 0xFFFFFFFF, "over the"),
    ],
)
def test_garbage_pointer_in_the_result(
    runtime: AgentloopRuntime, tmp_path: Path, packed: int, why: str
) -> None:
    signed = packed - (1 << 64) if packed >= 1 << 63 else packed
    guest = compile_guest("return_packed", tmp_path, packed=signed, text="")
    message = expect_error("agentloop_error", activate, runtime, guest, {})
    assert why in message


@pytest.mark.parametrize(
    "text, why",
    [
        ("hello world", "not UTF-8 JSON"),
        ('{"status": "completed"}', "without `output`"),
        ('{"status": "done", "output": 1}', "'done'"),
        ('{"status": "failed", "error": "boom"}', "without error {code, message}"),
        ("[1, 2, 3]", "JSON object, got list"),
    ],
)
def test_bad_output(runtime: AgentloopRuntime, tmp_path: Path, text: str, why: str) -> None:
    packed = (1024 << 32) | len(text)
    guest = compile_guest("return_packed", tmp_path, packed=packed, text=wat_string(text.encode()))
    message = expect_error("agentloop_error", activate, runtime, guest, {})
    assert why in message


def test_failed_result_passes_through(runtime: AgentloopRuntime, tmp_path: Path) -> None:
    text = '{"status":"failed","error":{"code":"tool_failed","message":"m","extra":1}}'
    guest = compile_guest(
        "return_packed", tmp_path, packed=(1024 << 32) | len(text), text=wat_string(text.encode())
    )
    assert activate(runtime, guest, {}) == {
        "status": "failed",
        "error": {"code": "tool_failed", "message": "m"},
    }


def test_trap(runtime: AgentloopRuntime, tmp_path: Path) -> None:
    message = expect_error(
        "agentloop_error", activate, runtime, compile_guest("trap", tmp_path), {}
    )
    assert "trapped" in message and "unreachable" in message


def test_missing_export(runtime: AgentloopRuntime, tmp_path: Path) -> None:
    message = expect_error(
        "agentloop_error", activate, runtime, compile_guest("missing_export", tmp_path), {}
    )
    assert "does not export brain_activate" in message


def test_unknown_import(runtime: AgentloopRuntime, tmp_path: Path) -> None:
    message = expect_error(
        "agentloop_error", activate, runtime, compile_guest("bad_import", tmp_path), {}
    )
    assert "imports env.printf" in message and "brain.call" in message


def test_not_a_wasm_module(runtime: AgentloopRuntime, tmp_path: Path) -> None:
    junk = tmp_path / "junk.wasm"
    junk.write_bytes(b"\x00asm garbage")
    message = expect_error("agentloop_error", activate, runtime, junk, {})
    assert "is not an Agentloop: a WebAssembly binary of unknown version/layer" in message
    junk.write_bytes(b"#!/bin/sh\n")
    message = expect_error("agentloop_error", activate, runtime, junk, {})
    assert "is not an Agentloop: not a WebAssembly binary (no \\0asm magic)" in message


def test_missing_file(runtime: AgentloopRuntime, tmp_path: Path) -> None:
    message = expect_error("agentloop_error", activate, runtime, tmp_path / "nope.wasm", {})
    assert "cannot read Agentloop module" in message


def test_no_guest_state_survives_between_activations(
    runtime: AgentloopRuntime, tmp_path: Path
) -> None:
    guest = compile_guest("counter", tmp_path)
    for _ in range(5):
        assert activate(runtime, guest, {}) == {"status": "completed", "output": "fresh"}


# --- modules and caching ----------------------------------------------------------------------


def test_load_module_info(tmp_path: Path) -> None:
    guest = compile_guest("relay", tmp_path)
    info = load_module_info(guest)
    assert info == {
        "path": str(guest.resolve()),
        "sha256": hashlib.sha256(guest.read_bytes()).hexdigest(),
    }


def test_changed_file_is_detected_by_its_hash(runtime: AgentloopRuntime, tmp_path: Path) -> None:
    target = tmp_path / "loop.wasm"
    first = send_const_guest(b'{"op":"first"}', tmp_path / "a")
    second = send_const_guest(b'{"op":"second"}', tmp_path / "b")
    brain = FakeBrain()
    target.write_bytes(first.read_bytes())
    activate(runtime, target, {}, brain)
    target.write_bytes(second.read_bytes())  # same size, same path
    activate(runtime, target, {}, brain)
    assert brain.ops() == ["first", "second"]


def test_disk_cache_is_used_and_survives_a_new_engine(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    guest = compile_guest("relay", tmp_path)
    runtime = AgentloopRuntime(cache_dir=cache)
    assert activate(runtime, guest, {"op": "telemetry.record"})["output"] == {}
    [cached] = list(cache.glob("*.cwasm"))
    assert cached.name.startswith(load_module_info(guest)["sha256"])

    from brain.agentloop.modules import _load_serialized

    other = wasmtime.Engine(_engine_config())
    assert _load_serialized(other, str(cache), load_module_info(guest)["sha256"]) is not None


def _engine_config() -> wasmtime.Config:
    config = wasmtime.Config()
    config.parallel_compilation = False
    config.epoch_interruption = True
    return config


def test_corrupt_disk_cache_falls_back_to_compiling(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    guest = compile_guest("relay", tmp_path)
    sha = load_module_info(guest)["sha256"]
    (cache / f"{sha}-wasmtime.cwasm").write_bytes(b"not a serialized module")
    runtime = AgentloopRuntime(cache_dir=cache)
    assert activate(runtime, guest, {"op": "telemetry.record"})["output"] == {}


# --- threads ---------------------------------------------------------------------------------


def test_concurrent_activations_keep_their_own_guest_calls(tmp_path: Path) -> None:
    """Threads activating at once (some failing inside guest calls) never see each other's
    guest calls or failures."""
    runtime = AgentloopRuntime()
    relay = compile_guest("relay", tmp_path)
    bad = compile_guest("call_pointer", tmp_path, ptr=-1, len=8)
    errors: list[str] = []

    def worker(n: int) -> None:
        try:
            for i in range(40):
                if (n + i) % 3 == 0:
                    try:
                        activate(runtime, bad, {})
                        errors.append("bad pointer was accepted")
                    except AgentloopError as exc:
                        if not exc.message.startswith("brain.call: request pointer"):
                            errors.append(exc.message)
                    continue
                key = f"{n}-{i}"
                result = activate(
                    runtime,
                    relay,
                    {"op": "echo", "key": key},
                    lambda request: {"key": request["key"]},
                )
                if result["output"] != {"key": key}:
                    errors.append(f"{key}: {result}")
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(repr(exc))

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
        assert not thread.is_alive()
    assert errors == []


def test_runtimes_share_one_engine_and_ignore_foreign_engines(tmp_path: Path) -> None:
    """Another Engine in the process (with its own FuncTypes) must not disturb ours (stack hazard 5:
    a FuncType shared across Engines aborts the process)."""
    foreign = wasmtime.Engine()
    foreign_store = wasmtime.Store(foreign)
    ty = wasmtime.FuncType([wasmtime.ValType.i32()], [wasmtime.ValType.i32()])
    wasmtime.Func(foreign_store, ty, lambda x: x + 1)
    relay = compile_guest("relay", tmp_path)
    for runtime in (AgentloopRuntime(), AgentloopRuntime(memory_limit_bytes=16 << 20)):
        result = activate(runtime, relay, {"op": "telemetry.record"})
        assert result == {"status": "completed", "output": {}}


def test_guest_call_from_a_start_function(runtime: AgentloopRuntime, tmp_path: Path) -> None:
    brain = FakeBrain()
    message = expect_error(
        "agentloop_error", activate, runtime, compile_guest("start_calls_host", tmp_path), {}, brain
    )
    assert "start function" in message
    assert brain.requests == []
