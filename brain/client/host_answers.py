"""What a host answers Brain for each way a handler can end, for both host servers.

The threaded `HostServer` (brain/client/host.py) and the asyncio `AsyncHostServer`
(brain/client/async_host.py) run handlers differently but must answer alike: the same shapes
for a value, a raised exception, a cancelled call, a missing handler and an answer that is not
JSON (docs/host-tools.md, "The Python SDK"). Keeping those rules here keeps the two in step.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any

from brain.client.errors import BrainClientError, ClientClosed, NotFound, TransportError

log = logging.getLogger("brain.client")

ENVIRONMENT_OPS = ("setup", "detach", "teardown", "exec", "read", "write")
REQUEST_OPS = ("exec", "read", "write")  # the ops whose method takes the request
TOOL_ANSWER_KEYS = frozenset({"content", "is_error", "events"})


def served_handlers(tools: Mapping[str, Any] | None, environments: Mapping[str, Any] | None,
                    wait_secs: float, max_concurrency: int) -> tuple[dict[str, Any],
                                                                     dict[str, Any]]:
    """The tools and environments a host server is asked to serve, as its own dicts; what it
    could never serve is refused when the server is made, not at its first call."""
    tools, environments = dict(tools or {}), dict(environments or {})
    if not tools and not environments:
        raise ValueError("serve at least one host tool or environment")
    for name, handler in tools.items():
        if not callable(handler):
            raise TypeError(f"the handler of the tool {name!r} is not callable")
    if not 0 <= wait_secs <= 30:
        raise ValueError("wait_secs must be between 0 and 30")
    if max_concurrency < 1:
        raise ValueError("max_concurrency must be at least 1")
    return tools, environments


def message_of(exc: BaseException) -> str:
    """An exception's text, or its type's name when it has none (a bare CancelledError)."""
    return str(exc) or type(exc).__name__


def tool_value_answer(value: Any) -> dict[str, Any]:
    """A Tool handler's return value as its answer: a dict of only the answer keys (with
    `content`) is the full answer, anything else is the content."""
    if isinstance(value, dict) and "content" in value and set(value) <= TOOL_ANSWER_KEYS:
        return dict(value)
    return {"content": value, "is_error": False}


def tool_failure_answer(message: str, cancelled: bool) -> dict[str, Any]:
    """A Tool handler that raised: an error result, `cancelled` once the call's signal fired."""
    answer: dict[str, Any] = {"content": message, "is_error": True}
    if cancelled:
        answer["outcome"] = "cancelled"
    return answer


def missing_tool_answer(name: str) -> dict[str, Any]:
    return {"content": f"this host does not serve the tool {name!r}", "is_error": True}


def environment_method(handler: Any, op: str | None) -> Any:
    """The handler's method for `op`, or None when the op is unknown or not a callable."""
    method = getattr(handler, op, None) if op in ENVIRONMENT_OPS else None
    return method if callable(method) else None


def missing_op_answer(name: str, op: str | None) -> dict[str, Any]:
    return {"error": {"message": f"this host's environment {name!r} has no {op} operation"}}


def op_result_answer(op: str | None, result: Any) -> dict[str, Any]:
    """An Environment method's return value as its answer (None is an empty result)."""
    if result is None:
        result = {}
    if not isinstance(result, dict):
        return {"error": {"message": f"{op} returned {type(result).__name__}, not an object"}}
    return {"result": result}


def op_failure_answer(message: str, cancelled: bool) -> dict[str, Any]:
    error: dict[str, Any] = {"message": message}
    if cancelled:
        error["outcome"] = "cancelled"
    return {"error": error}


def postable(kind: str, answer: dict[str, Any]) -> dict[str, Any]:
    """The answer itself when it is JSON; else an error answer saying why (never a crash)."""
    try:
        json.dumps(answer, allow_nan=False)
    except (TypeError, ValueError) as exc:
        message = f"the handler's answer is not JSON ({exc})"
        return {"content": message, "is_error": True} if kind == "tool" \
            else {"error": {"message": message}}
    return answer


def log_unposted(call_id: str, exc: BrainClientError) -> None:
    """Say why an answer's one POST failed; it is never resent (Brain records it as it stands)."""
    if isinstance(exc, ClientClosed):
        log.warning("host call %s: the host server stopped before the answer was posted",
                    call_id)
    elif isinstance(exc, TransportError):
        log.error("host call %s: the answer may not have reached Brain and is not resent "
                  "(Brain records it unknown if it did not): %s", call_id, exc)
    elif isinstance(exc, NotFound):
        log.warning("host call %s: Brain no longer waits for it (deadline passed or the call "
                    "was settled); the answer was dropped", call_id)
    else:
        log.error("host call %s: Brain refused the answer: %s", call_id, exc)
