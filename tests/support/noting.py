"""A host Tool whose answer carries an extension Event: what the chat and console tests show.

`NOTING` configures the model `noting` (it calls the host Tool `note` once, then says "noted")
and the Tool itself; `note` is the handler a test serves it with (`brain.serve_host(tools=
{"note": note})`), answering with one `weather.noted` Event that carries the Tool's input.
"""

from __future__ import annotations

from typing import Any

from brain.client import HostCall

NOTING = """
[models.noting]
provider = "scripted"
script = [{tool_calls = [{name = "note", input = {topic = "rain"}}]}, {text = "noted"}]

[tools.note]
route = "host"
description = "Served by the test process; its answer carries an extension Event."
"""


def note(call: HostCall) -> dict[str, Any]:
    return {"content": "noted", "events": [{"kind": "weather.noted", "data": call.input}]}
