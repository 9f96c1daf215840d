"""`AgentloopRuntime.activate`: run one activation of an Agentloop module to its result.

Each activation gets a fresh Store and Instance (nothing a guest keeps in globals or memory
survives to the next one; state goes through kv and the transcript), a memory limit, and a
deadline enforced two ways: epoch interruption stops a guest computing on its own, and every
guest call checks the overall deadline, because re-arming the epoch per guest call alone never
stops a guest that keeps calling the host (stack hazard 7).
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any

import wasmtime

from brain.agentloop import abi
from brain.agentloop.components import CompiledComponent
from brain.agentloop.direct_call import call_ints
from brain.agentloop.engine import current_engine
from brain.agentloop.errors import AgentloopError, cancelled_error, loop_error, timeout_error
from brain.agentloop.guestcall import Activation, GuestCallHandler, StopActivation, current
from brain.agentloop.memory import GuestMemory, as_u32
from brain.agentloop.modules import CompiledModule


class ActivationStopper:
    """Lets another thread cancel one activation, before or while it runs.

    The session actor makes one per turn and calls `stop()` when the turn is cancelled; the
    activation attaches itself when it starts, and a stop that came first applies at once.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._activation: Activation | None = None
        self.requested = False

    def stop(self) -> None:
        with self._lock:
            self.requested = True
            activation = self._activation
        if activation is not None:
            activation.cancel()

    def attach(self, activation: Activation) -> None:
        with self._lock:
            self._activation = activation
            requested = self.requested
        if requested:
            activation.cancel()


class AgentloopRuntime:
    """Runs Agentloop activations in this process; safe to call from several threads.

    Create it after the actor process forks (the Engine is made lazily anyway). `cache_dir`,
    when given, keeps serialized compiled modules on disk; it must be a directory only Brain
    writes to, because deserialized code is trusted.
    """

    def __init__(
        self,
        memory_limit_bytes: int = 256 << 20,
        max_payload_bytes: int = 8 << 20,
        cache_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        if memory_limit_bytes <= 0 or max_payload_bytes <= 0:
            raise ValueError("memory_limit_bytes and max_payload_bytes must be positive")
        self.memory_limit_bytes = memory_limit_bytes
        self.max_payload_bytes = max_payload_bytes
        self.cache_dir = os.fspath(cache_dir) if cache_dir is not None else None

    def prepare(self, module_path: str | os.PathLike[str]) -> str:
        """Compile and check a module ahead of its first activation; returns its sha256."""
        return current_engine().modules.get(module_path, self.cache_dir).sha256

    def activate(
        self,
        module_path: str | os.PathLike[str],
        payload: dict[str, Any],
        guest_call: GuestCallHandler,
        deadline: float | None,
        stopper: ActivationStopper | None = None,
    ) -> dict[str, Any]:
        """Run brain_activate(payload) and return the loop's result.

        `guest_call(request) -> result` serves each brain.call on this thread. If it raises
        AgentloopError the activation ends with that error; any other exception becomes an
        `internal` error result for the guest. `deadline` is a time.monotonic() value or None.
        `stopper`, when given, can cancel the activation from another thread (code `cancelled`).
        Returns `{"status": "completed", "output"}` or `{"status": "failed", "error": {code,
        message}}`; raises AgentloopError otherwise.
        """
        process = current_engine()
        compiled = process.modules.get(module_path, self.cache_dir)
        data = abi.encode(payload)
        if len(data) > self.max_payload_bytes:
            raise loop_error(
                f"the activation payload is {len(data)} bytes, over the "
                f"{self.max_payload_bytes}-byte limit"
            )
        if deadline is not None and time.monotonic() >= deadline:
            raise timeout_error("the turn deadline passed before the Agentloop started")
        if stopper is not None and stopper.requested:
            raise cancelled_error("the turn was cancelled before the Agentloop started")

        store = wasmtime.Store(process.engine)
        store.set_limits(memory_size=self.memory_limit_bytes)
        activation = Activation(
            guest_call=guest_call,
            store=store,
            max_payload_bytes=self.max_payload_bytes,
            memory_limit_bytes=self.memory_limit_bytes,
            deadline=deadline,
            arm=lambda: process.arm(store, deadline),
            advance_to=process.advance_to,
        )
        with process.running(store):  # the store's deadline is forgotten however this ends
            activation.rearm()
            if stopper is not None:
                stopper.attach(activation)
            token = current.set(activation)
            try:
                if isinstance(compiled, CompiledComponent):
                    text = self._run_component(compiled, activation, process.component_linker,
                                               data)
                else:
                    ptr, length = self._run(compiled, activation, data)
            finally:
                current.reset(token)
        if isinstance(compiled, CompiledComponent):
            return self._text_result(text)
        return self._result(activation, ptr, length)

    def _run_component(
        self, compiled: CompiledComponent, activation: Activation, linker: Any, data: bytes
    ) -> str:
        """`activate(payload)` of a fresh instance of a component guest."""
        store = activation.store
        try:
            instance = linker.instantiate(store, compiled.component)
            entry = instance.get_func(store, "activate")
            text = entry(store, data.decode("utf-8"))
            entry.post_return(store)
        except BaseException as exc:
            raise self._failure(activation, exc) from None
        if not isinstance(text, str):
            raise loop_error(f"activate returned {type(text).__name__}, not a string")
        return text

    def _text_result(self, text: str) -> dict[str, Any]:
        data = text.encode("utf-8", "surrogatepass")
        if len(data) > self.max_payload_bytes:
            raise loop_error(
                f"activate returned {len(data)} bytes, over the "
                f"{self.max_payload_bytes}-byte payload limit"
            )
        try:
            result = abi.decode(data)
        except ValueError as exc:
            raise loop_error(
                f"activate returned output that is not JSON ({exc}): {abi.preview(data)}"
            ) from None
        return check_result(result)

    def _run(
        self, compiled: CompiledModule, activation: Activation, data: bytes
    ) -> tuple[int, int]:
        store = activation.store
        try:
            instance = compiled.pre.instantiate(store)
            exports = instance.exports(store)
            memory = exports["memory"]
            activation.memory = memory  # type: ignore[assignment]
            activation.alloc = exports["brain_alloc"]  # type: ignore[assignment]
            entry = exports["brain_activate"]
            view = GuestMemory(memory, store)  # type: ignore[arg-type]
            ptr = activation.write_buffer(view, store, data, "the activation payload")
            packed = call_ints(entry, store, ptr, len(data))  # type: ignore[arg-type]
        except BaseException as exc:
            raise self._failure(activation, exc) from None
        return abi.unpack(packed)

    def _failure(self, activation: Activation, exc: BaseException) -> BaseException:
        """The error to raise for an activation that did not return."""
        if activation.failure is not None:
            return activation.failure
        if isinstance(exc, wasmtime.Trap):
            if exc.trap_code == wasmtime.TrapCode.INTERRUPT:
                return activation.interrupted("while it was running")
            return loop_error(f"the Agentloop trapped: {exc.message}{self._hint(activation)}")
        if isinstance(exc, wasmtime.WasmtimeError):
            trap = component_trap(str(exc))
            if trap == "interrupt":
                return activation.interrupted("while it was running")
            if trap is not None:
                return loop_error(f"the Agentloop trapped: {trap}{wasi_hint(str(exc))}")
            return loop_error(f"the Agentloop could not run: {exc}{self._hint(activation)}")
        if isinstance(exc, StopActivation):  # another thread's callback exception, see guestcall
            return loop_error("the Agentloop was stopped by a guest call")
        return exc

    def _hint(self, activation: Activation) -> str:
        """Guest memory use, so a trap caused by the memory limit is recognisable."""
        if activation.memory is None:
            return ""
        size = activation.memory.data_len(activation.store)
        hint = f" (guest memory {size} of its limit of {self.memory_limit_bytes} bytes"
        if size > self.memory_limit_bytes * 3 // 4:
            hint += ": near the limit, where memory.grow fails"
        return hint + ")"

    def _result(self, activation: Activation, ptr: int, length: int) -> dict[str, Any]:
        if length > self.max_payload_bytes:
            raise loop_error(
                f"brain_activate returned {length} bytes, over the "
                f"{self.max_payload_bytes}-byte payload limit"
            )
        assert activation.memory is not None
        view = GuestMemory(activation.memory, activation.store)
        raw = view.read(as_u32(ptr), length, "brain_activate: result")
        try:
            result = abi.decode(raw)
        except ValueError as exc:
            raise loop_error(
                f"brain_activate returned output that is not UTF-8 JSON ({exc}): {abi.preview(raw)}"
            ) from None
        return check_result(result)


def component_trap(text: str) -> str | None:
    """The trap a component call ended in (`interrupt`, "wasm `unreachable` instruction
    executed", ...), from the error wasmtime-py raises for it; None when it was no trap. Only
    that line reaches the loop's author: the rest is a backtrace of the interpreter."""
    marker = "wasm trap: "
    at = text.rfind(marker)
    if at < 0:
        return None
    return text[at + len(marker):].strip().splitlines()[0]


def wasi_hint(text: str) -> str:
    """Why a Python guest most likely trapped: it reached for WASI, which is stubbed out."""
    if "called trapping stub" in text or "wasilibc" in text or "wasi:" in text:
        return (" (the guest reached for something Agentloops do not have: files, a clock, "
                "entropy or stdio; see docs/agentloop.md, \"What a Python guest has\")")
    return ""


def check_result(result: Any) -> dict[str, Any]:
    """The activation result, reduced to the contract's two shapes."""
    if not isinstance(result, dict):
        raise loop_error(f"brain_activate must return a JSON object, got {type(result).__name__}")
    status = result.get("status")
    if status == "completed":
        if "output" not in result:
            raise loop_error('brain_activate returned status "completed" without `output`')
        return {"status": "completed", "output": result["output"]}
    if status == "failed":
        error = result.get("error")
        if (
            not isinstance(error, dict)
            or not isinstance(error.get("code"), str)
            or not isinstance(error.get("message"), str)
        ):
            raise loop_error(
                'brain_activate returned status "failed" without error {code, message} strings'
            )
        return {"status": "failed", "error": {"code": error["code"], "message": error["message"]}}
    raise loop_error(f'brain_activate returned status {status!r}; expected "completed" or "failed"')


__all__ = ["ActivationStopper", "AgentloopRuntime", "AgentloopError", "check_result"]
