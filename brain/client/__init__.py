"""Python client SDK for a Brain server, standard library only (docs/client.md).

    from brain.client import Brain

    with Brain("http://127.0.0.1:3210", token) as brain:
        session = brain.create_session(model="scripted")
        print(session.send("hello").output)
"""

from brain.client.client import Brain
from brain.client.errors import (
    AlreadyAnswered,
    BrainAPIError,
    BrainClientError,
    Cancelled,
    ClientClosed,
    Conflict,
    Draining,
    Forbidden,
    IdempotencyAmbiguous,
    IdempotencyConflict,
    InternalError,
    InvalidRequest,
    NotFound,
    PayloadTooLarge,
    ProtocolError,
    RequestInProgress,
    RequestTimeout,
    ServerError,
    SessionActive,
    SessionBusy,
    SessionDamaged,
    SessionEnded,
    TeardownFailed,
    TransportError,
    Unauthorized,
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
    "Brain", "Session", "EventStream", "CancelSignal", "Signal", "new_idempotency_key",
    "HostServer", "HostCall", "current_call", "AlreadyAnswered",
    "Event", "EventPage", "ModelDelta", "Origin", "Receipt", "Transcript", "TurnError",
    "TurnResult", "TurnState", "CancelAnswer",
    "BrainClientError", "BrainAPIError", "ClientClosed", "Cancelled", "TransportError",
    "RequestTimeout", "ProtocolError", "InvalidRequest", "Unauthorized", "Forbidden", "NotFound",
    "Conflict", "SessionBusy", "SessionEnded", "SessionActive", "IdempotencyConflict",
    "RequestInProgress", "IdempotencyAmbiguous", "PayloadTooLarge", "UnsupportedMediaType",
    "ServerError", "SessionDamaged", "InternalError", "TeardownFailed", "Draining",
]
