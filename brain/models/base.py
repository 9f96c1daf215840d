"""The provider interface every model family implements, and its one error type.

The executor actor runs `Provider.call` in a plain OS thread. A call either returns the complete
result or raises `ModelCallError` (a brain.effects.EffectFailed), whose `outcome` the session
journals in `model_call_failed` as is. Providers never retry: a model call is an
effect, sent at most once (docs/models.md, "Outcomes").
"""

from __future__ import annotations

import json
import logging
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

from brain.effects import EffectFailed, Outcome
from brain.errors import ConfigError

Request = dict[str, Any]
"""`{"messages": [contract messages], "tools": [{name, description, input_schema}], "options"}`"""

Result = dict[str, Any]
"""`{"message": {"role": "assistant", "content": [blocks]}, "stop_reason": str, "usage": {}}`"""

OnDelta = Callable[[str], None]


class ModelCallError(EffectFailed):
    """A model call that produced no result.

    `outcome` (brain.effects) says what Brain knows about the effect: `error` (it definitely
    did not happen or the provider refused it), `unknown` (it may have happened), `timeout` (a
    deadline expired after the request was sent), `cancelled` (the caller asked to stop).
    `message` is short and safe to journal: it never holds headers or the API key. `status` is
    the provider's HTTP status, when there was one.
    """

    def __init__(self, outcome: Outcome | str, message: str, status: int | None = None) -> None:
        super().__init__(outcome, message)
        self.status = status

    def __reduce__(self) -> tuple[Any, ...]:
        # keep all three fields when the error crosses a process boundary (actors pickle)
        return (type(self), (self.outcome.value, self.message, self.status))

    def __repr__(self) -> str:
        return (f"ModelCallError({self.outcome.value!r}, {self.message!r}, "
                f"status={self.status!r})")


class ProviderSpecError(ConfigError):
    """A `[models.NAME]` table that no provider can run; raised by `make_provider`."""


class Provider(ABC):
    """One configured model. Instances hold no secrets and no per-call state."""

    never_waits = False
    """True for a provider that answers from memory without any I/O or sleep: the model
    executor then calls it on its own thread instead of handing the call to a worker thread."""

    def __init__(self, name: str, spec: dict[str, Any]) -> None:
        self.name = name
        self.spec = spec

    @abstractmethod
    def call(self, request: Request, on_delta: OnDelta, cancel: threading.Event) -> Result:
        """Send `request` once and return the complete result, or raise ModelCallError.

        `on_delta(text)` receives streamed text pieces as they arrive (live only; the result
        holds the whole text). When `cancel` is set the call stops within about half a second
        and raises ModelCallError("cancelled", ...).
        """

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"


def result(content: list[dict[str, Any]], stop_reason: str, usage: dict[str, Any]) -> Result:
    """Build the contract's complete model result."""
    return {
        "message": {"role": "assistant", "content": content},
        "stop_reason": stop_reason,
        "usage": usage,
    }


def text_of(message: dict[str, Any]) -> str:
    """The concatenated text blocks of a contract message (a bare string counts as text)."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "".join(
        block.get("text", "")
        for block in content
        if isinstance(block, dict) and block.get("type") == "text"
    )


def blocks_of(message: dict[str, Any]) -> list[dict[str, Any]]:
    """A message's content as a list of blocks; a bare string becomes one text block."""
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return [block for block in content if isinstance(block, dict)]
    return []


def tool_result_text(content: Any) -> str:
    """A tool result's `content` as the string wire formats want: strings stay as they are."""
    if isinstance(content, str):
        return content
    return json.dumps(content, ensure_ascii=False, separators=(",", ":"))


def safe_delta(on_delta: OnDelta, logger: logging.Logger) -> OnDelta:
    """Wrap the live-delta callback so it can never change a call's outcome.

    Deltas are live-only and best effort; the journaled result is complete without them. A
    consumer that raises is logged (its exception class only) and the call goes on.
    """

    def deliver(text: str) -> None:
        try:
            on_delta(text)
        except Exception as exc:  # noqa: BLE001 - best effort by design
            logger.debug("live delta consumer failed: %s", type(exc).__name__)

    return deliver


def check_cancel(cancel: threading.Event) -> None:
    """Raise the cancelled outcome if the caller already asked to stop."""
    if cancel.is_set():
        raise ModelCallError("cancelled", "model call cancelled")
