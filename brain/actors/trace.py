"""Actor-message tracing: one JSON line per message received and per message sent.

Every Brain actor derives from `TracedDispatcher`, so every message is traced in this one place
(timers, cancellations, exits and releases included) by wrapping `receiveMessage` and `send`.
The session actor adds a "commit" line once a batch of records is durable, which is what lets
`brain trace --check` prove from the file alone that no effect left before its fence.
With BRAIN_TRACE unset the wrappers cost one global lookup.
"""

from __future__ import annotations

import os
from typing import Any

from thespian.actors import ActorExitRequest, ActorTypeDispatcher

from brain import request_context
from brain.logs import json_logs
from brain.protocol.messages import ProcessIs, WhichProcess
from brain.tracing import writer
from brain.tracing.lines import HOUSEKEEPING, address, describe, message_type

_LOG_CONTEXT = json_logs()


def unbatched(message: Any) -> tuple[Any, ...]:
    """The messages a batch carries (EffectBatch, OutcomeBatch), or the message itself."""
    inner = getattr(message, "messages", None) or getattr(message, "outcomes", None)
    return tuple(inner) if isinstance(inner, tuple) else (message,)


class TracedDispatcher(ActorTypeDispatcher):
    """Thespian's type dispatcher, tracing (under `trace_name`) what it receives and sends."""

    trace_name = "actor"

    def trace_session_id(self) -> str | None:
        """The session this actor serves now, for lines whose message names none."""
        return None

    def receiveMessage(self, message: Any, sender: Any) -> Any:
        if _LOG_CONTEXT:
            self._log_context(message)
        out = writer.tracer()
        if out is not None:
            for each in unbatched(message):
                self._trace(out, "recv", sender, each)
            if isinstance(message, ActorExitRequest):
                result = super().receiveMessage(message, sender)
                out.flush()
                return result
        return super().receiveMessage(message, sender)

    def receiveMsg_WhichProcess(self, msg: WhichProcess, sender: Any) -> None:
        """Every Brain actor says which process it is: the supervisor learns a new actor's
        real address and pid from the answer, and /readyz that the actor answers."""
        self.send(sender, ProcessIs(os.getpid(), self.trace_name, msg.name))

    def send(self, targetAddr: Any, msg: Any) -> None:
        out = writer.tracer()
        if out is not None:
            for each in unbatched(msg):  # a batch's messages are traced one by one
                self._trace(out, "send", targetAddr, each)
        super().send(targetAddr, msg)

    def trace_commit(self, session_id: str, seqs: list[int]) -> None:
        """Record that `seqs` of `session_id` are durable (called right after the fsync)."""
        out = writer.tracer()
        if out is not None:
            out.write({"dir": "commit", "kind": self.trace_name,
                       "actor": address(self.myAddress), "msg": "commit",
                       "session_id": session_id, "seqs": seqs})

    def trace_mark(self, session_id: str, what: str) -> None:
        """Record a moment of the session that is no message (a turn suspended, resumed)."""
        out = writer.tracer()
        if out is not None:
            out.write({"dir": "mark", "kind": self.trace_name,
                       "actor": address(self.myAddress), "msg": what,
                       "session_id": session_id})

    def _log_context(self, message: Any) -> None:
        """What a JSON log line made while handling `message` names (brain/logs.py)."""
        started = getattr(message, "started", None)
        request_context.request_id.set(getattr(message, "request_id", None))
        request_context.session_id.set(getattr(message, "session_id", None)
                                       or self.trace_session_id())
        request_context.sequence.set(started if isinstance(started, int) else None)

    def _trace(self, out: writer.TraceWriter, direction: str, peer: Any, message: Any) -> None:
        kind = message_type(message)
        if kind in HOUSEKEEPING and not out.everything:
            return
        line = describe(message, {"dir": direction, "kind": self.trace_name,
                                  "actor": address(self.myAddress), "peer": address(peer),
                                  "msg": kind})
        if "session_id" not in line:
            session_id = self.trace_session_id()
            if session_id:
                line["session_id"] = session_id
        out.write(line)
