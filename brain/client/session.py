"""A handle on one session: its operations, plus state cached from the handle's own answers.

The cached fields (`status`, `last_sequence`, `config`, `turn`, ...) are a snapshot taken when
this handle last received a Session representation: at creation, `refresh()` and `end()`.
Sends, submissions, streams and work running on the server never change them, so code that
reads `.status` sees exactly what it last asked for; call `refresh()` to observe progress.

Each method is one request of brain/client/routes.py carried out by the client's Api; the
asyncio handle (async_session.py) runs the very same requests, awaited.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Generic, TypeVar

from brain.client import routes
from brain.client.api import Api
from brain.client.cancelling import send_with_signal
from brain.client.keys import new_idempotency_key
from brain.client.routes import TurnInput
from brain.client.shapes import (
    CancelAnswer,
    Event,
    EventPage,
    Receipt,
    Transcript,
    TurnResult,
    TurnState,
)
from brain.client.signal import CancelSignal
from brain.client.stream import EventStream

ApiT = TypeVar("ApiT")


class SessionSnapshot(Generic[ApiT]):
    """The cached state of a handle (sync or asyncio): the last Session representation it got."""

    def __init__(self, api: ApiT, session_id: str,
                 state: dict[str, Any] | None = None) -> None:
        self._api = api
        self.id = session_id
        self._path = routes.session_path(session_id)
        self._apply(state or {})

    def __repr__(self) -> str:
        return (f"<{type(self).__name__} {self.id} status={self.status} "
                f"last_sequence={self.last_sequence}>")

    def _apply(self, state: dict[str, Any]) -> None:
        self.raw: dict[str, Any] = state
        self.status: str | None = state.get("status")
        self.last_sequence: int | None = state.get("last_sequence")
        self.config: dict[str, Any] | None = state.get("config")
        self.created_at: str | None = state.get("created_at")
        self.updated_at: str | None = state.get("updated_at")
        self.turn: TurnState | None = TurnState.from_json(state.get("turn"))

    @property
    def metadata(self) -> dict[str, Any]:
        return dict((self.config or {}).get("metadata") or {})


class Session(SessionSnapshot[Api]):
    # --- reading ----------------------------------------------------------------------------

    def refresh(self) -> Session:
        """Re-read GET /v1/sessions/{id} into the cached fields; never activates the session."""
        self._apply(self._api.run(routes.get_session(self._path)))
        return self

    def transcript(self) -> Transcript:
        """The canonical messages and the journal sequence they are current through."""
        return self._api.run(routes.transcript(self._path))

    def events_page(self, after: int = 0, limit: int | None = None) -> EventPage:
        """One page of committed Events after the exclusive cursor `after`."""
        return self._api.run(routes.events_page(self._path, after, limit))

    def events(self, cursor: int = 0, *, page_size: int | None = None) -> Iterator[Event]:
        """Every committed Event after `cursor`, reading pages until `has_more` is false.

        Save `event.sequence` as your cursor after handling each Event to resume later.
        """
        self._api.check_open()
        return self._iter_events(cursor, page_size)

    def _iter_events(self, cursor: int, page_size: int | None) -> Iterator[Event]:
        while True:
            page = self.events_page(cursor, page_size)
            yield from page.events
            if not page.has_more:
                return
            cursor = page.next_after

    def follow(self, cursor: int = 0, *, deltas: bool = False, timeout: float | None = None,
               max_reconnects: int = 5) -> EventStream:
        """Live Events after `cursor` over SSE: catch-up, then new commits, across reconnects.

        The stream is open (subscribed) when this returns; a wrong id or token raises here.
        Model deltas are skipped unless `deltas=True`; then they arrive as ModelDelta, which has
        no sequence. The stream ends after session_ended or deletion; close it (or use `with`)
        when you stop early. `timeout` bounds each read (default: the client's stream timeout).
        """
        stream = self._api.events(self._path + "/events", after=cursor, deltas=deltas,
                                  timeout=timeout, max_reconnects=max_reconnects)
        return stream.connect()  # subscribed on return: deltas of a later submit are not missed

    # --- turns ------------------------------------------------------------------------------

    def send(self, input: TurnInput, idempotency_key: str | None = None,
             signal: CancelSignal | None = None, *, timeout: float | None = None,
             limits: dict[str, int] | None = None) -> TurnResult:
        """Run a turn and wait for its TurnResult (a failed turn is a result, not an error).

        With `signal`, firing it cancels the turn: the SDK waits until the turn is admitted,
        POSTs cancel, waits for that answer and returns the send's (usually cancelled) result.
        A send under a signal always carries an Idempotency-Key, generated if not given.
        Retry an uncertain send with the same key, and as a send, never as a submit.
        `limits` asks for lower limits for this turn alone (`max_turn_secs`, `max_model_calls`).
        """
        if signal is None:
            return self._api.run(routes.send(self._path, input, idempotency_key, timeout,
                                             limits))
        key = idempotency_key or new_idempotency_key()
        return send_with_signal(self._api, self.id, input, key, signal, timeout, limits)

    def submit(self, input: TurnInput, idempotency_key: str | None = None, *,
               limits: dict[str, int] | None = None) -> Receipt:
        """Start a turn without waiting (Prefer: respond-async): the durable turn's receipt.

        Always sent with an Idempotency-Key, generated when not given; if the answer is lost,
        the TransportError carries the key: retry with it, as a submit, never as a send.
        Follow the turn with `follow(receipt.sequence - 1)` or `events(...)`.
        """
        key = idempotency_key or new_idempotency_key()
        return self._api.run(routes.submit(self._path, input, key, limits))

    # --- lifecycle --------------------------------------------------------------------------

    def interrupt(self, idempotency_key: str | None = None) -> CancelAnswer:
        """POST cancel: stop work in flight; the session stays usable. Idle: sequence None."""
        return self._api.run(routes.cancel(self._path, idempotency_key))

    def end(self, idempotency_key: str | None = None, *, timeout: float | None = None) -> Session:
        """End the session (waits for active work) and cache the ended Session."""
        self._apply(self._api.run(routes.end(self._path, idempotency_key, timeout)))
        return self

    def delete(self, idempotency_key: str | None = None) -> None:
        """Remove an ended, failed or damaged session, its Environments and its tokens.

        After a TeardownFailed, delete again with a *new* key to request another attempt.
        """
        self._api.run(routes.delete(self._path, idempotency_key))

    def create_token(self) -> str:
        """A bearer token good for this session alone; use it with `brain.with_token(...)`."""
        return self._api.run(routes.create_token(self._path))

    # --- branching --------------------------------------------------------------------------

    def fork(self, at_sequence: int, idempotency_key: str | None = None) -> Session:
        """A new session starting from this one's state at `at_sequence` (an Event's sequence,
        not inside a turn): the same configuration, the transcript and kv as they stood there,
        a journal of its own. Returns the new session's handle; this one is left as it was.
        Retry with the same key to get the same fork."""
        state = self._api.run(routes.fork(self._path, at_sequence, idempotency_key))
        return Session(self._api, state["id"], state)
