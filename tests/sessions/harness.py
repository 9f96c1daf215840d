"""Drive the session core by hand: no actor, no disk, no clock (brain/sessions/core.py)."""

from __future__ import annotations

from typing import Any

from brain.effects import Outcome
from brain.journal import empty_projection
from brain.protocol.effects import EffectDone
from brain.protocol.messages import (
    CancelTurn,
    CreateSession,
    DeleteSession,
    Delivered,
    EndSession,
    Recover,
    StartTurn,
)
from brain.sessions import core
from brain.sessions.state import (
    ClientReply,
    Command,
    Damaged,
    GuestAnswer,
    GuestCall,
    Limits,
    Opened,
    Phase,
    SessionState,
    Step,
    new_session,
)

SESSION = "s-1"
LIMITS = Limits(max_model_calls=3, max_turn_secs=60, max_tool_secs=5, max_emitted_bytes=200,
                idle_ttl_ms=None)
TOOLS = [{"name": "echo", "route": "builtin", "function": "echo"},
         {"name": "clock", "route": "builtin", "function": "clock"}]
ENVIRONMENTS = [{"name": "work", "kind": "local"}, {"name": "scratch", "kind": "local"}]


def config(*, environments: list[dict[str, Any]] | None = None,
           idle_ttl_ms: int | None = None) -> dict[str, Any]:
    config = {"model": {"name": "scripted"}, "agentloop": {"name": "default", "path": "x.wasm"},
              "tools": TOOLS, "environments": environments or []}
    if idle_ttl_ms is not None:
        config["idle_ttl_ms"] = idle_ttl_ms
    return config


COMMANDS = {
    "create": lambda: CreateSession(config(), []),
    "send": lambda: StartTurn("hi", "send"),
    "submit": lambda: StartTurn("hi", "submit"),
    "cancel": lambda: CancelTurn(),
    "end": lambda: EndSession(),
    "delete": lambda: DeleteSession(),
    "recover": lambda: Recover(),
}


class Session:
    """One session core and every Step it took."""

    def __init__(self, limits: Limits = LIMITS) -> None:
        self.state: SessionState = new_session(SESSION, limits)
        self.now = 1_700_000_000_000
        self.steps: list[Step] = []
        self.requests = 0
        self.calls = 0

    # --- feeding inputs ---------------------------------------------------------------------

    def feed(self, event: Any) -> Step:
        step = core.step(self.state, event, self.now)
        self.now += 7
        self.state = step.state
        self.steps.append(step)
        return step

    def open(self) -> Step:
        return self.feed(Opened(empty_projection()))

    def command(self, command: Any, *, set_up: frozenset[str] = frozenset(),
                refused: Any = None, journal: bool | None = None) -> Step:
        self.requests += 1
        delivered = Delivered(f"r{self.requests}", SESSION, command, "web", {})
        return self.feed(Command(delivered, refused, set_up, journal))

    def guest(self, op: str, **args: Any) -> Step:
        self.calls += 1
        return self.feed(GuestCall(self.calls, {"op": op, **args}))

    def done(self, started: int, outcome: Outcome = Outcome.OK, **fields: Any) -> Step:
        return self.feed(EffectDone(SESSION, started, outcome, **fields))

    def damaged(self) -> Step:
        return self.feed(Damaged("the journal is damaged: bad frame"))

    # --- reaching a phase -------------------------------------------------------------------

    def created(self, **config_args: Any) -> Session:
        self.open()
        self.command(CreateSession(config(**config_args), []))
        return self

    def running(self) -> Session:
        self.created()
        self.command(StartTurn("hi", "send"))
        assert self.state.phase is Phase.RUNNING
        return self

    def ended(self) -> Session:
        self.created(environments=ENVIRONMENTS)
        for started in sorted(self.state.environments.waiting):
            self.done(started, result={})
        self.command(EndSession())
        for started in sorted(self.state.environments.waiting):
            self.done(started, result={})
        assert self.state.projection.status == "ended"
        return self

    # --- reading what happened --------------------------------------------------------------

    @property
    def records(self) -> list[dict[str, Any]]:
        return [record for step in self.steps for record in step.records]

    def kinds(self, step: Step | None = None) -> list[str]:
        return [r["kind"] for r in (step.records if step else self.records)]


def client_replies(step: Step) -> list[ClientReply]:
    return [reply for reply in step.replies if isinstance(reply, ClientReply)]


def only_reply(step: Step) -> ClientReply:
    [reply] = client_replies(step)
    return reply


def guest_answers(step: Step) -> dict[int, dict[str, Any]]:
    return {a.call_id: a.result for a in step.replies if isinstance(a, GuestAnswer)}


def sent(step: Step, kind: type) -> list[Any]:
    return [send.message for send in step.sends if isinstance(send.message, kind)]
