"""The one way out of the guest: a JSON request to Brain's `host.call`, a JSON result back.

Inside a component the import is the world's `host.call`. Outside one (a loop's own unit
tests in plain Python) `answer_with(fn)` installs a function that plays Brain's part.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from brain_guest.errors import GuestCallError

try:  # imported now, at build time: a guest cannot import anything once it runs
    from wit_world.imports import host as _world_host
except ImportError:  # plain Python: no component around this loop
    _world_host = None

_answer: Callable[[str], str] | None = None

# json sets up its scanner and encoder on first use; doing it here, at build time, puts them in
# the snapshot every fresh instance starts from (~0.3 ms an activation otherwise, measured).
json.loads(json.dumps({"warm": [1, 2.5, "x", None, True]}, separators=(",", ":")))


def answer_with(fn: Callable[[dict[str, Any]], dict[str, Any]] | None) -> None:
    """Serve guest calls with `fn(request) -> result` (tests), or with Brain again (None)."""
    global _answer
    _answer = None if fn is None else (lambda text: json.dumps(fn(json.loads(text))))


def call(request: dict[str, Any]) -> dict[str, Any]:
    """Send one guest call; returns its result, raises GuestCallError for an error result."""
    return _checked(str(request.get("op")), exchange(request))


def _checked(op: str, result: Any) -> dict[str, Any]:
    if isinstance(result, dict) and isinstance(result.get("error"), dict):
        error = result["error"]
        raise GuestCallError(op, str(error.get("code", "internal")),
                             str(error.get("message", "")))
    return result


def call_text(op: str, text: str) -> dict[str, Any]:
    """Send a request already in JSON text; its result, errors raised as for `call`."""
    answer = _answer if _answer is not None else _world_call()
    return _checked(op, json.loads(answer(text)))


def answer_text(text: str) -> str:
    """Send a request already in JSON text; the answer's text, unchecked."""
    answer = _answer if _answer is not None else _world_call()
    return answer(text)


def exchange(request: Any) -> Any:
    """One request out, its result back, both as JSON values; nothing checked."""
    answer = _answer if _answer is not None else _world_call()
    return json.loads(answer(json.dumps(request, separators=(",", ":"))))


def _world_call() -> Callable[[str], str]:
    if _world_host is None:
        raise RuntimeError(
            "brain_guest is running outside a Brain component: build the loop with "
            "`brain agentloop build`, or serve its calls with brain_guest._host.answer_with"
        )
    return _world_host.call
