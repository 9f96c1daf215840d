"""Small builders shared by the provider tests."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from brain.models import ModelCallError, make_provider

KEY = "sk-test-5ecret-" + "Zq9" * 10
ENV = {"FAKE_KEY": KEY}
FAST = {"connect_timeout_s": 2, "first_byte_timeout_s": 3, "idle_timeout_s": 3}


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}]}


FAMILIES = {"openai": ("fast", "/v1", "served-model"), "anthropic": ("claude", "", "claude-test")}
"""Each network family's test provider: (its name, the API root under the fake's URL, model)."""


def family_provider(family: str, url: str, environ: dict[str, str] = ENV, **spec: Any):
    """A provider of `family` against the fake server at `url`, reading its key from FAKE_KEY
    in `environ`, with short timeouts; `spec` adds or overrides keys."""
    name, root, model = FAMILIES[family]
    return make_provider(
        name,
        {
            "provider": family,
            "base_url": f"{url}{root}",
            "model": model,
            "api_key_env": "FAKE_KEY",
            **FAST,
            **spec,
        },
        environ=environ,
    )


def openai_provider(url: str, **spec: Any):
    return family_provider("openai", url, **spec)


def anthropic_provider(url: str, **spec: Any):
    return family_provider("anthropic", url, **spec)


def lookups(text: str, first: str, second: str) -> list[dict[str, Any]]:
    """An assistant turn (`text`, then two `lookup` calls with ids `first` and `second`) and the
    tool turn that answers them: the first in text, the second an error with a JSON content."""
    return [
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": text},
                {"type": "tool_call", "id": first, "name": "lookup", "input": {"word": "cat"}},
                {"type": "tool_call", "id": second, "name": "lookup", "input": {"word": "dog"}},
            ],
        },
        {
            "role": "tool",
            "content": [
                {"type": "tool_result", "tool_call_id": first, "content": "a pet",
                 "is_error": False},
                {"type": "tool_result", "tool_call_id": second, "content": {"code": 7},
                 "is_error": True},
            ],
        },
    ]


def run(provider, request: dict[str, Any] | None = None, cancel: threading.Event | None = None):
    """Call once; return (result, deltas)."""
    deltas: list[str] = []
    request = request or {"messages": [user("hi")], "tools": [], "options": {}}
    out = provider.call(request, deltas.append, cancel or threading.Event())
    return out, deltas


def failure(provider, request: dict[str, Any] | None = None,
            cancel: threading.Event | None = None) -> ModelCallError:
    """Call once, expecting the call to fail; return its error."""
    with pytest.raises(ModelCallError) as info:
        run(provider, request, cancel)
    return info.value


class TimedCancel(threading.Event):
    """A cancel event that remembers when it was set, to measure how fast a call stops."""

    fired_at = float("inf")

    def set(self) -> None:
        self.fired_at = time.monotonic()
        super().set()

    def stopped_within(self, seconds: float) -> bool:
        return time.monotonic() - self.fired_at < seconds


def cancel_after(seconds: float) -> TimedCancel:
    event = TimedCancel()
    timer = threading.Timer(seconds, event.set)
    timer.daemon = True
    timer.start()
    return event
