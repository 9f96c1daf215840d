"""The Agentloop's thread inside a session actor, and its guest calls to the actor.

The Agentloop runs in a thread of the session actor's process. Each guest call it makes
(`brain.call`, brain/agentloop/guestcall.py) is posted to the actor through the bridge, and the
thread waits for the actor's answer: the actor alone commits to the journal, so every guest call
is ordered in the one journal. When the guest returns, fails or is stopped, the thread posts an
ActivationFinished the same way.

A suspended turn's waiting guest call is answered `SUSPENDED`: the guest is unwound and its
instance dropped. A resumed activation first answers its guest calls from its `Replay`, on this
thread, until the replay is done (brain/sessions/replay.py); then its calls go to the actor.
"""

from __future__ import annotations

import logging
import queue
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from brain.actors.bridge import ThreadBridge
from brain.actors.session.runaway import RunawayWatch
from brain.actors.worker_threads import WorkerThreads
from brain.sessions.replay import Diverged, Replay
from brain.sessions.state import ActivationFinished
from brain.settings import Settings

log = logging.getLogger(__name__)

# The actor answers every guest call; this bound only keeps a thread from outliving a lost actor.
GUEST_CALL_ANSWER_SECS = 24 * 3600.0 + 60.0

SUSPENDED: dict[str, Any] = {"suspended": True}
"""The answer that unwinds a guest whose turn is suspended (compared by identity)."""
SUSPENDED_CODE = "suspended"


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


def wasm_cache_dir(settings: Settings) -> Path:
    """Where compiled Agentloops are kept serialized: the machine's one cache, private to its
    user, which `brain agentloop build`, `check` and `replay` fill too
    (brain/agentloop/compile_cache.py)."""
    from brain.agentloop.compile_cache import machine_cache_dir

    if settings.agentloop_cache is not None:
        return settings.agentloop_cache.expanduser().absolute()
    return machine_cache_dir()


def agentloop_runtime(settings: Settings) -> Any:
    """One AgentloopRuntime per actor process, created after the fork (stack hazard 4)."""
    global _runtime
    if _runtime is None:
        from brain.agentloop import AgentloopRuntime
        from brain.durable_dirs import make_dirs_durable

        # Compiled modules are cached as serialized bytes in a directory only Brain writes, so
        # a freshly forked session actor loads the Agentloop instead of compiling it again.
        cache_dir = wasm_cache_dir(settings)
        make_dirs_durable(cache_dir)
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
                     activation: int = 0, replay: Replay | None = None,
                     watch: RunawayWatch | None = None) -> None:
    """Run `run(guest_call)` in a daemon thread; its outcome comes back through the bridge.

    `inline`, when given, may carry a guest call out on this thread and answer it (True);
    otherwise the call goes through the bridge (brain/actors/session/inline.py). `replay`,
    for a resumed activation, answers the guest's calls until it is done. `watch` hears when
    the guest waits on a call and when it ends (brain/actors/session/runaway.py)."""
    from brain.agentloop import AgentloopError

    def live_call(op: dict[str, Any]) -> dict[str, Any]:
        call = PendingGuestCall(op, turn=turn, activation=activation)
        if inline is not None and inline(call):
            answer = call.answer.get_nowait()
        else:
            bridge.post(call)
            try:
                answer = call.answer.get(timeout=GUEST_CALL_ANSWER_SECS)
            except queue.Empty:
                return {"error": {"code": "internal", "message": "session actor did not answer"}}
        if answer is SUSPENDED:
            raise AgentloopError(SUSPENDED_CODE, "the turn was suspended")
        return answer

    def guest_call(op: dict[str, Any]) -> dict[str, Any]:
        if replay is None or replay.done:
            if watch is None:
                return live_call(op)
            with watch.waiting():
                return live_call(op)
        try:
            return replay.answer(op)
        except Diverged as exc:
            raise AgentloopError(exc.code, exc.message) from None
        except Exception:  # a Brain bug: the guest must never be told something else
            log.exception("replay of guest call %r failed", op.get("op"))
            raise AgentloopError("internal", "the replay of a guest call failed") from None

    def body() -> None:
        try:
            result = run(guest_call)
        except AgentloopError as exc:
            finished = ActivationFinished(turn, None, {"code": exc.code, "message": exc.message})
        except Exception as exc:  # a Brain bug must still close the turn
            finished = ActivationFinished(turn, None, {"code": "internal",
                                                       "message": type(exc).__name__})
        else:
            if replay is not None and not replay.done:
                diverged = replay.returned()
                finished = ActivationFinished(turn, None, {"code": diverged.code,
                                                           "message": diverged.message})
            else:
                finished = ActivationFinished(turn, result, None)
        finally:
            if watch is not None:
                watch.stop()
        bridge.post(ActivationDone(activation, finished))

    _activation_threads.submit(body, name=f"activation-{turn}")
