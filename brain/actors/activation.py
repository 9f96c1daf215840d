"""The Agentloop's thread inside a session actor, and its guest calls to the actor.

The Agentloop runs in a thread of the session actor's process. Each guest call it makes
(`brain.call`, brain/agentloop/guestcall.py) is posted to the actor through the bridge, and the
thread waits for the actor's answer: the actor alone commits to the journal, so every guest call
is ordered in the one journal. When the guest returns, fails or is stopped, the thread posts an
ActivationFinished the same way.
"""

from __future__ import annotations

import queue
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from brain.actors.bridge import ThreadBridge
from brain.actors.worker_threads import WorkerThreads
from brain.sessions.state import ActivationFinished
from brain.settings import Settings

# The actor answers every guest call; this bound only keeps a thread from outliving a lost actor.
GUEST_CALL_ANSWER_SECS = 24 * 3600.0 + 60.0


@dataclass
class PendingGuestCall:
    """One `brain.call` from the guest, waiting for the actor's answer."""

    op: dict[str, Any]
    answer: queue.SimpleQueue = field(default_factory=queue.SimpleQueue)
    turn: int = 0  # the turn whose activation asks
    activation: int = 0  # which activation of this actor asks (an abandoned one is refused)

    def respond(self, result: dict[str, Any]) -> None:
        self.answer.put(result)


@dataclass(frozen=True)
class ActivationDone:
    """The activation thread's ActivationFinished, with the activation it ends.

    Activations are numbered per actor process rather than known by their turn: a turn whose
    commit failed is retried under the same sequence, and the abandoned activation's late
    calls and end must not be taken for the new one's."""

    activation: int
    event: ActivationFinished


_runtime = None


def agentloop_runtime(settings: Settings) -> Any:
    """One AgentloopRuntime per actor process, created after the fork (stack hazard 4)."""
    global _runtime
    if _runtime is None:
        from brain.agentloop import AgentloopRuntime

        # Compiled modules are cached as serialized bytes in a directory only Brain writes, so
        # a freshly forked session actor loads the Agentloop instead of compiling it again.
        cache_dir = settings.data_path / "run" / "wasm-cache"
        cache_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        _runtime = AgentloopRuntime(memory_limit_bytes=settings.agentloop_memory_mb << 20,
                                    cache_dir=cache_dir)
    return _runtime


def activate_recorded(runtime: Any, agentloop: dict[str, Any], payload: dict[str, Any],
                      guest_call: Any, deadline: float | None,
                      stopper: Any = None) -> dict[str, Any]:
    """Run the Agentloop recorded at creation, refusing a module file changed since then."""
    from brain.agentloop import AgentloopError

    try:
        current = runtime.prepare(agentloop["path"])  # hashed only when the file changed
    except (OSError, AgentloopError):
        raise AgentloopError("agentloop_error",
                             f"Agentloop {agentloop['name']!r}: module file "
                             f"{agentloop['path']} cannot be read") from None
    recorded = agentloop.get("sha256")
    if recorded and current != recorded:
        raise AgentloopError("agentloop_error",
                             f"Agentloop {agentloop['name']!r} changed since the session was "
                             f"created (recorded sha256 {recorded[:12]}…, file now "
                             f"{current[:12]}…); create a new session to use the new module")
    return runtime.activate(agentloop["path"], payload, guest_call, deadline, stopper)


_activation_threads = WorkerThreads("activation")
"""One activation runs at a time per session actor; its thread waits for the next turn's."""


def start_activation(bridge: ThreadBridge, run: Any, turn: int,
                     inline: Callable[[PendingGuestCall], bool] | None = None,
                     activation: int = 0) -> None:
    """Run `run(guest_call)` in a daemon thread; its outcome comes back through the bridge.

    `inline`, when given, may carry a guest call out on this thread and answer it (True);
    otherwise the call goes through the bridge (brain/actors/session_inline.py)."""

    def guest_call(op: dict[str, Any]) -> dict[str, Any]:
        call = PendingGuestCall(op, turn=turn, activation=activation)
        if inline is not None and inline(call):
            return call.answer.get_nowait()
        bridge.post(call)
        try:
            return call.answer.get(timeout=GUEST_CALL_ANSWER_SECS)
        except queue.Empty:
            return {"error": {"code": "internal", "message": "session actor did not answer"}}

    def body() -> None:
        from brain.agentloop import AgentloopError

        try:
            result = run(guest_call)
        except AgentloopError as exc:
            finished = ActivationFinished(turn, None, {"code": exc.code, "message": exc.message})
        except Exception as exc:  # a Brain bug must still close the turn
            finished = ActivationFinished(turn, None, {"code": "internal",
                                                       "message": type(exc).__name__})
        else:
            finished = ActivationFinished(turn, result, None)
        bridge.post(ActivationDone(activation, finished))

    _activation_threads.submit(body, name=f"activation-{turn}")
