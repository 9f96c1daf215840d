"""Python client SDK for a Brain server, standard library only (docs/client.md).

    from brain.client import Brain

    with Brain("http://127.0.0.1:3210", token) as brain:
        session = brain.create_session(model="scripted")
        print(session.send("hello").output)

`AsyncBrain`, its asyncio twin, needs httpx and is imported on first use, so the sync client
keeps needing the standard library only.
"""

from typing import Any

from brain.client.client import Brain
from brain.client.errors import (
    AlreadyAnswered,
    BodyTimedOut,
    BrainAPIError,
    BrainClientError,
    Cancelled,
    ClientClosed,
    Conflict,
    Draining,
    Forbidden,
    ForkInsideTurn,
    IdempotencyAmbiguous,
    IdempotencyConflict,
    InternalError,
    InvalidRequest,
    McpServerUnavailable,
    NotFound,
    Overloaded,
    PayloadTooLarge,
    ProtocolError,
    RequestInProgress,
    RequestTimeout,
    SequenceBeyondEnd,
    ServerError,
    SessionActive,
    SessionBusy,
    SessionDamaged,
    SessionEnded,
    TeardownFailed,
    TransportError,
    Unauthorized,
    Unavailable,
    UnsupportedMediaType,
)
from brain.client.host import HostCall, HostServer, current_call
from brain.client.keys import new_idempotency_key
from brain.client.session import Session
from brain.client.shapes import (
    CancelAnswer,
    Event,
    EventPage,
    ModelDelta,
    Origin,
    Receipt,
    Transcript,
    TurnError,
    TurnResult,
    TurnState,
)
from brain.client.signal import CancelSignal, Signal
from brain.client.stream import EventStream

__all__ = [
    "Brain", "AsyncBrain", "AsyncSession", "AsyncEventStream", "AsyncHostServer",
    "Session", "EventStream", "CancelSignal", "Signal", "new_idempotency_key",
    "HostServer", "HostCall", "current_call", "AlreadyAnswered",
    "Event", "EventPage", "ModelDelta", "Origin", "Receipt", "Transcript", "TurnError",
    "TurnResult", "TurnState", "CancelAnswer",
    "BrainClientError", "BrainAPIError", "ClientClosed", "Cancelled", "TransportError",
    "RequestTimeout", "ProtocolError", "InvalidRequest", "Unauthorized", "Forbidden", "NotFound",
    "Conflict", "SessionBusy", "SessionEnded", "SessionActive", "IdempotencyConflict",
    "RequestInProgress", "IdempotencyAmbiguous", "PayloadTooLarge", "UnsupportedMediaType",
    "ServerError", "SessionDamaged", "InternalError", "TeardownFailed", "McpServerUnavailable",
    "Draining",
    "ForkInsideTurn", "SequenceBeyondEnd", "BodyTimedOut", "Unavailable", "Overloaded",
]

_ASYNC = {"AsyncBrain": "brain.client.async_client", "AsyncSession": "brain.client.async_session",
          "AsyncEventStream": "brain.client.async_stream",
          "AsyncHostServer": "brain.client.async_host"}


def __getattr__(name: str) -> Any:
    """The asyncio client on first use: importing it imports httpx."""
    if name in _ASYNC:
        import importlib

        return getattr(importlib.import_module(_ASYNC[name]), name)
    raise AttributeError(f"module 'brain.client' has no attribute {name!r}")
