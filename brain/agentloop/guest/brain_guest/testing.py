"""Run a Python Agentloop in plain Python, with a function playing Brain's part: a loop's own
unit tests, before it is built.

    from brain_guest.testing import serve_with
    serve_with(lambda request: {"messages": [], "through_sequence": 0}
               if request["op"] == "transcript.read" else {...})
    result = run(my_loop.activate, {"input": "hi"})
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from brain_guest import _host, entry


def serve_with(answer: Callable[[dict[str, Any]], dict[str, Any]] | None) -> None:
    """Answer the loop's guest calls with `answer(request) -> result`; None undoes it."""
    _host.answer_with(answer)


def run(activate: Callable[..., Any], payload: dict[str, Any]) -> dict[str, Any]:
    """The activation result `activate` gives for `payload`, as Brain would receive it."""
    payload = {"kind": "turn", "session_id": "test", "turn": 1, "limits": {}, **payload}
    return json.loads(entry.activate(activate, json.dumps(payload), seal_runtime=False))
