"""Small builders shared by the provider tests."""

from __future__ import annotations

import threading
import time
from typing import Any

from brain.models import make_provider

KEY = "sk-test-5ecret-" + "Zq9" * 10
ENV = {"FAKE_KEY": KEY}
FAST = {"connect_timeout_s": 2, "first_byte_timeout_s": 3, "idle_timeout_s": 3}


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def openai_provider(url: str, **spec: Any):
    return make_provider(
        "fast",
        {
            "provider": "openai",
            "base_url": f"{url}/v1",
            "model": "served-model",
            "api_key_env": "FAKE_KEY",
            **FAST,
            **spec,
        },
        environ=ENV,
    )


def anthropic_provider(url: str, **spec: Any):
    return make_provider(
        "claude",
        {
            "provider": "anthropic",
            "base_url": url,
            "model": "claude-test",
            "api_key_env": "FAKE_KEY",
            **FAST,
            **spec,
        },
        environ=ENV,
    )


def run(provider, request: dict[str, Any] | None = None, cancel: threading.Event | None = None):
    """Call once; return (result, deltas)."""
    deltas: list[str] = []
    request = request or {"messages": [user("hi")], "tools": [], "options": {}}
    out = provider.call(request, deltas.append, cancel or threading.Event())
    return out, deltas


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
