"""`brain.call`: how a running guest reaches Brain, one request at a time: a *guest call*.

(Brain says "guest call" for the Wasm side and "host call" only for the Tool calls and
Environment ops a client process serves, brain/host/. The ABI's import names, which committed
modules link against, are unchanged.)

The host function is defined once per Engine on a Linker (so instantiation is cheap), which
means it cannot close over an activation. The activation running on this thread is found
through a ContextVar instead: the guest calls back synchronously on the thread that called
into it, so the variable set by `activate` is the one visible here.

Anything that must end the activation (a bad pointer, the deadline, a guest trap inside
brain_alloc) is recorded on the Activation and then raised as `StopActivation`, which wasmtime
turns into a trap that unwinds the guest. The runtime reports the recorded failure, not the
exception that came back out of wasmtime: wasmtime-py keeps the last callback exception in a
process-wide global, so with several activating threads the exception itself may be another
thread's.
"""

from __future__ import annotations

import contextvars
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import wasmtime

from brain.agentloop import abi
from brain.agentloop.direct_call import call_ints
from brain.agentloop.errors import AgentloopError, cancelled_error, loop_error, timeout_error
from brain.agentloop.memory import GuestMemory, as_u32, check_range
from brain.agentloop.transcript_echo import TranscriptEcho

log = logging.getLogger(__name__)

GuestCallHandler = Callable[[dict[str, Any]], dict[str, Any]]


class StopActivation(Exception):
    """Unwinds the guest; the reason is on the Activation."""


@dataclass
class Activation:
    """Everything one activation's guest calls need, and the first reason it must stop."""

    guest_call: GuestCallHandler
    store: wasmtime.Store
    max_payload_bytes: int
    memory_limit_bytes: int
    deadline: float | None
    arm: Callable[[], int]  # arms the store for the deadline; returns the epoch it traps at
    advance_to: Callable[[int], bool]  # traps the stores armed up to an epoch now
    memory: wasmtime.Memory | None = None
    alloc: wasmtime.Func | None = None
    failure: BaseException | None = field(default=None)
    calls: int = 0
    cancelled: bool = False
    armed_epoch: int = 0
    echo: TranscriptEcho = field(default_factory=TranscriptEcho)
    _arming: threading.Lock = field(default_factory=threading.Lock)

    def stop(self, failure: BaseException) -> StopActivation:
        if self.failure is None:
            self.failure = failure
        return StopActivation()

    def rearm(self) -> None:
        """Arm the store again (time spent in the host counted against it), unless cancelled:
        a cancelled store keeps the epoch it is being advanced to."""
        with self._arming:
            if not self.cancelled:
                self.armed_epoch = self.arm()

    def cancel(self) -> None:
        """From any thread: stop this activation now. A guest computing on its own traps at
        once (its armed epoch is advanced to); a guest in a guest call stops when the call
        returns. With no turn deadline the store is armed too far away to advance to, and
        the guest stops at its next guest call."""
        with self._arming:
            self.cancelled = True
            armed = self.armed_epoch
        self.advance_to(armed)

    def check_deadline(self, when: str) -> None:
        if self.cancelled:
            raise self.stop(cancelled_error(f"the turn was cancelled {when}"))
        if self.deadline is not None and time.monotonic() >= self.deadline:
            raise self.stop(timeout_error(f"the turn deadline passed {when}"))

    def interrupted(self, where: str) -> AgentloopError:
        """The error for an epoch trap: the cancellation when there was one, else the deadline."""
        if self.cancelled:
            return cancelled_error(f"the Agentloop was stopped by cancellation {where}")
        return timeout_error(f"the Agentloop was stopped at the turn deadline {where}")

    def write_buffer(self, view: GuestMemory, caller: Any, data: bytes, what: str) -> int:
        """Copy data into a fresh guest buffer from brain_alloc; returns its pointer."""
        assert self.alloc is not None
        try:
            ptr = as_u32(call_ints(self.alloc, caller, len(data)))
        except BaseException as exc:  # a trap; see the module docstring for why so broad
            if isinstance(exc, wasmtime.Trap) and exc.trap_code == wasmtime.TrapCode.INTERRUPT:
                failure = self.interrupted(f"in brain_alloc ({what})")
            elif isinstance(exc, wasmtime.Trap):
                failure = loop_error(f"brain_alloc trapped while allocating {what}: {exc}")
            else:
                failure = loop_error(f"brain_alloc failed while allocating {what}")
            raise self.stop(failure) from None
        if ptr == 0 and data:
            raise self.stop(
                loop_error(
                    f"brain_alloc({len(data)}) returned 0 for {what}: the guest is out of "
                    f"memory (memory is {view.size()} bytes, limit {self.memory_limit_bytes})"
                )
            )
        try:
            view.write(ptr, data, f"brain_alloc returned a buffer for {what}:")
        except AgentloopError as exc:
            raise self.stop(exc) from None
        return ptr

    def serve(self, caller: Any, ptr: int, length: int) -> int:
        """One brain.call: read the request, ask the host, hand the result back."""
        self.calls += 1
        self.check_deadline(f"before guest call #{self.calls}")
        if self.memory is None or self.alloc is None:
            raise self.stop(
                loop_error(
                    "brain.call was called during instantiation (from a start function); "
                    "call the host from brain_activate"
                )
            )
        view = GuestMemory(self.memory, caller)
        ptr, length = as_u32(ptr), as_u32(length)
        try:
            check_range(ptr, length, view.size(), "brain.call: request")
        except AgentloopError as exc:
            raise self.stop(exc) from None
        op, data = self._served(length, lambda: view.read(ptr, length, "brain.call: request"))
        return abi.pack(self.write_buffer(view, caller, data, f"the result of {op}"), len(data))

    def serve_text(self, request: str) -> str:
        """One `host.call` of a component guest: the same service, as text."""
        self.calls += 1
        self.check_deadline(f"before guest call #{self.calls}")
        raw = request.encode("utf-8", "surrogatepass")
        _, data = self._served(len(raw), lambda: raw)
        return data.decode("utf-8")

    def _served(self, length: int, read: Callable[[], bytes]) -> tuple[str, bytes]:
        """The op and the encoded result of a request of `length` bytes that `read` gives."""
        if length > self.max_payload_bytes:
            op = "?"
            result = abi.error_result(
                "payload_too_large",
                f"the request is {length} bytes, over the {self.max_payload_bytes}-byte limit",
            )
        else:
            op, result = self._answer(read())
        self.check_deadline(f"during guest call #{self.calls} ({op})")
        data = self._encode_result(op, result)
        self.rearm()  # epochs counted the time spent in the host too
        return op, data

    def _answer(self, raw: bytes) -> tuple[str, dict[str, Any]]:
        try:
            request = self.echo.decode_request(raw)
        except ValueError as exc:
            return "?", abi.error_result(
                "invalid_request", f"the request is not UTF-8 JSON ({exc}): {abi.preview(raw)}"
            )
        if not isinstance(request, dict):
            return "?", abi.error_result("invalid_request", "the request must be a JSON object")
        op = request.get("op")
        if not isinstance(op, str) or not op:
            return "?", abi.error_result("invalid_request", "the request has no string `op`")
        try:
            result = self.guest_call(request)
        except AgentloopError as exc:
            raise self.stop(exc) from None  # the host chose to end the activation
        except Exception:
            log.exception("guest call %s failed", op)
            return op, abi.error_result("internal", f"the host failed to serve {op}")
        if not isinstance(result, dict):
            log.error("guest call %s returned %s, not a dict", op, type(result).__name__)
            return op, abi.error_result("internal", f"the host failed to serve {op}")
        return op, result

    def _encode_result(self, op: str, result: dict[str, Any]) -> bytes:
        try:
            data = self.echo.encode_result(result)
        except (TypeError, ValueError):
            log.exception("guest call %s returned a result that is not JSON", op)
            data = abi.encode(abi.error_result("internal", f"the host failed to serve {op}"))
        if len(data) > self.max_payload_bytes:
            data = abi.encode(
                abi.error_result(
                    "payload_too_large",
                    f"the result of {op} is {len(data)} bytes, over the "
                    f"{self.max_payload_bytes}-byte limit",
                )
            )
        return data


current: contextvars.ContextVar[Activation | None] = contextvars.ContextVar(
    "brain_agentloop_activation", default=None
)


def brain_call(caller: wasmtime.Caller, ptr: int, length: int) -> wasmtime.Val:
    """The `brain.call` import, shared by every instance of one Engine."""
    activation = current.get()
    if activation is None:  # only reachable if a guest outlives its activate() call
        raise StopActivation()
    try:
        # A ready Val skips wasmtime-py's type probing of a bare int (~20 us per call).
        return wasmtime.Val.i64(activation.serve(caller, ptr, length))
    except StopActivation:
        raise
    except BaseException as exc:  # a host bug: end this activation, keep the process
        activation.stop(exc)
        raise StopActivation() from None


def host_call(store: object, request: str) -> str:
    """The component world's `host.call`, shared by every component instance of one Engine."""
    activation = current.get()
    if activation is None:
        raise StopActivation()
    try:
        return activation.serve_text(request)
    except StopActivation:
        raise
    except BaseException as exc:  # a host bug: end this activation, keep the process
        activation.stop(exc)
        raise StopActivation() from None
