"""Write a Brain Agentloop in plain Python.

An Agentloop module defines one function, `activate(turn)`, and calls Brain through the
modules here; `brain agentloop build loop.py -o loop.wasm` builds it into a Wasm component:

    from brain_guest import Turn, model, transcript

    def activate(turn: Turn) -> str:
        conversation = transcript.read()
        conversation.append(turn.user_message())
        reply = model.call(conversation)
        conversation.append(reply.message)
        transcript.set(conversation)
        return reply.text

What `activate` returns is the turn's output (any JSON value). A guest call that fails raises
`GuestCallError`; raising `TurnFailed` (or letting a `GuestCallError` escape) fails the turn with
its code and message; any other exception fails it with `agentloop_error`, naming the exception
and the line that raised it.

Each activation runs in a fresh instance: module globals start as they were when the loop was
built, every time. Keep what must last in `kv` or the transcript.
"""

from brain_guest import events, kv, model, raw, telemetry, tools, transcript
from brain_guest.errors import GuestCallError, TurnFailed
from brain_guest.turn import Turn

__all__ = [
    "GuestCallError",
    "Turn",
    "TurnFailed",
    "events",
    "kv",
    "model",
    "raw",
    "telemetry",
    "tools",
    "transcript",
]
