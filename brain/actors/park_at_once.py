"""Parking an effect as it is sent: the session actor's decision, carried in the effect.

An executor parks an effect still running after the suspension grace (BRAIN_SUSPEND_AFTER_MS),
or at once when the grace is 0 or work waits for a session actor (the admission board shows a
backlog), and says so with `Parked` (brain/actors/executors/base.py). Parked at once, that `Parked`
is a message decided before the effect even started: a Thespian send and receive, in two
processes, for what the session actor can see as well as the executor.

So that case is decided by the session actor, as it sends the effect: it reads the same rule
(the grace, the board), marks the message `park=True`, and steps a `Parked` of its own right
after the step that sent it. The executor does not decide again: a marked effect's outcome
goes to the registry from the start, even one it carries out at once, and no `Parked` is sent.
Exactly one side decides each effect, so the two cannot disagree: the outcome reaches either
the actor (unmarked, not parked yet) or the registry (marked, or parked by the executor later),
never both and never neither.

An effect that never waits (a scripted model without delays, an instant builtin) is not marked:
the executor carries it out on its own thread, and parking it would only suspend the turn for
an outcome that is already on its way. Those rules are here, for both sides.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from brain.actors.admission_board import BoardReader
from brain.actors.providers import ProviderCache
from brain.protocol.effects import Parked, RunModelCall, RunToolCall
from brain.tools.builtins import INSTANT_BUILTINS


def tool_runs_at_once(msg: RunToolCall) -> bool:
    """Whether the Tool executor carries this call out on its own thread (an instant builtin)."""
    tool = msg.tool if isinstance(msg.tool, dict) else {}
    return tool.get("route") == "builtin" and tool.get("function") in INSTANT_BUILTINS


def model_runs_at_once(msg: RunModelCall, providers: ProviderCache, environ: Any) -> bool:
    """Whether the model executor carries this call out on its own thread (a scripted model
    without delays). Only the scripted family ever does, so no other provider is built here."""
    if msg.model.get("provider", "scripted") != "scripted":
        return False
    try:
        return providers.get(msg.model["name"], msg.model, environ).never_waits
    except Exception:
        return False  # the executor's thread reports what is wrong with the model


def park_now(suspend_after_ms: float, board: BoardReader) -> bool:
    """The rule both sides apply to an effect that waits: park it as it starts when the grace
    is 0, or when work waits for a session actor (the admission board shows a backlog)."""
    return suspend_after_ms <= 0 or board.read()[0] > 0


class ParkAtOnce:
    """The session actor's side: which of a step's effects it parks as it sends them."""

    def __init__(self, suspend_after_ms: int, board: BoardReader) -> None:
        self._suspend_after_ms = suspend_after_ms
        self._board = board
        self._providers: ProviderCache | None = None  # made when first needed

    def mark(self, messages: list[Any], environ: Any) -> tuple[list[Any], list[Parked]]:
        """The messages to send (the parked ones marked) and the `Parked` to step after."""
        parked: list[Parked] = []
        if not any(isinstance(m, RunModelCall | RunToolCall) for m in messages):
            return messages, parked
        if not park_now(self._suspend_after_ms, self._board):
            return messages, parked
        marked = []
        for msg in messages:
            if isinstance(msg, RunModelCall | RunToolCall) and not self._at_once(msg, environ):
                msg = replace(msg, park=True)
                parked.append(Parked(msg.session_id, msg.started))
            marked.append(msg)
        return marked, parked

    def _at_once(self, msg: Any, environ: Any) -> bool:
        if isinstance(msg, RunToolCall):
            return tool_runs_at_once(msg)
        if self._providers is None:
            self._providers = ProviderCache()
        return model_runs_at_once(msg, self._providers, environ)
