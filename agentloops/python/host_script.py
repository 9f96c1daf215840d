"""Example Agentloop for exploring and testing Brain's guest calls: the turn's text input is a
JSON array of requests, e.g. [{"op": "kv.put", "key": "k", "value": 1}, {"op": "kv.read",
"key": "k"}]. It sends each in order and completes with the array of results, errors included
as results (as agentloops/examples/host_script.c)."""

import json

from brain_guest import Turn, TurnFailed
from brain_guest.raw import call_raw


def activate(turn: Turn) -> list:
    try:
        requests = json.loads(turn.input) if isinstance(turn.input, str) else None
    except ValueError:
        requests = None
    if not isinstance(requests, list):
        raise TurnFailed("invalid_request", "the input must be text holding a JSON array")
    return [call_raw(request) for request in requests]
