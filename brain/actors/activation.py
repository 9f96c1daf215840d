"""State of one running turn inside a session actor, and the activation thread.

The Agentloop runs in a thread of the session actor's process. Each host call it makes is posted
to the actor through the bridge and the thread waits for the actor's answer: the actor alone
commits to the journal, so every service call is ordered in the one journal.
"""

from __future__ import annotations

import queue
import threading
from dataclasses import dataclass, field
from typing import Any

from brain.actors.bridge import ThreadBridge

# The actor answers every host call; this bound only keeps a thread from outliving a lost actor.
HOST_CALL_ANSWER_SECS = 24 * 3600.0 + 60.0


@dataclass
class PendingHostCall:
    """One `brain.call` from the guest, waiting for the actor's answer."""

    op: dict[str, Any]
    answer: queue.SimpleQueue = field(default_factory=queue.SimpleQueue)

    def respond(self, result: dict[str, Any]) -> None:
        self.answer.put(result)


class SingleWaiter:
    """The guest waits for one effect (a model call): its result is the answer."""

    def __init__(self, call: PendingHostCall) -> None:
        self.call = call

    def settle(self, started: int, result: dict[str, Any]) -> None:
        self.call.respond(result)


class ToolBatchWaiter:
    """The guest waits for every Tool call of one `tools.call`; results return in call order."""

    def __init__(self, call: PendingHostCall, order: list[int]) -> None:
        self.call = call
        self.order = order
        self.results: dict[int, dict[str, Any]] = {}

    def settle(self, started: int, result: dict[str, Any]) -> None:
        self.results[started] = result
        if len(self.results) == len(self.order):
            self.call.respond({"results": [self.results[s] for s in self.order]})


@dataclass(frozen=True)
class ActivationFinished:
    """Posted by the activation thread when the guest returned, failed or was stopped."""

    turn: int
    result: dict[str, Any] | None
    error: dict[str, Any] | None


@dataclass
class ActiveTurn:
    sequence: int
    activation: int
    mode: str
    reply_to: Any
    request_id: str
    model_calls: int = 0
    forced_error: dict[str, Any] | None = None
    pending_effects: dict[int, Any] = field(default_factory=dict)  # started → waiter
    pending_kinds: dict[int, str] = field(default_factory=dict)  # started → "model_call"|...
    emitted_bytes: int = 0
    stop_reason: str | None = None  # "cancelled" or "timeout" once Brain is stopping the turn
    stopper: Any = None  # the activation's ActivationStopper: a cancel stops the guest itself

    def stopping_error(self) -> dict[str, Any] | None:
        if self.stop_reason == "timeout":
            return {"code": "turn_timeout", "message": "the turn exceeded BRAIN_MAX_TURN_SECS"}
        if self.stop_reason == "cancelled":
            return {"code": "cancelled", "message": "the turn was cancelled"}
        return None


def start_activation(
    bridge: ThreadBridge,
    run: Any,
    turn: int,
) -> threading.Thread:
    """Run `run(host_call)` in a daemon thread; its outcome comes back through the bridge."""

    def host_call(op: dict[str, Any]) -> dict[str, Any]:
        call = PendingHostCall(op)
        bridge.post(call)
        try:
            return call.answer.get(timeout=HOST_CALL_ANSWER_SECS)
        except queue.Empty:
            return {"error": {"code": "internal", "message": "session actor did not answer"}}

    def body() -> None:
        from brain.agentloop import AgentloopError

        try:
            result = run(host_call)
        except AgentloopError as exc:
            bridge.post(ActivationFinished(turn, None, {"code": exc.code, "message": exc.message}))
        except Exception as exc:  # a host bug must still close the turn
            bridge.post(ActivationFinished(turn, None, {"code": "internal",
                                                        "message": type(exc).__name__}))
        else:
            bridge.post(ActivationFinished(turn, result, None))

    thread = threading.Thread(target=body, name=f"activation-{turn}", daemon=True)
    thread.start()
    return thread
