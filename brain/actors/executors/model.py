"""The ModelExecutor actor: performs model calls the session actors have already journaled.

One per actor system, created at boot. Each call runs in its own thread, because a provider
call blocks for seconds; the EffectDone goes to the session actor, which commits it before the
Agentloop sees it. The executor never retries: a call it was sent is attempted exactly once.
Live text deltas go straight to the web workers (brain/live/), never to the journal.
Messages sent as JSON text are decoded here, the part seen in the session's last call only once
(brain/actors/executors/messages_cache.py).
"""

from __future__ import annotations

import os
import threading
from typing import Any

from brain.actors.executors.base import ExecutorActor
from brain.actors.executors.messages_cache import MessagesCache
from brain.actors.park_at_once import model_runs_at_once
from brain.actors.providers import ProviderCache
from brain.effects import Outcome
from brain.live import LivePublisher
from brain.protocol.effects import EffectDone, RunModelCall
from brain.settings import Settings


class ModelExecutor(ExecutorActor):
    thread_prefix = "model"
    trace_name = "model_executor"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.live = LivePublisher(Settings.from_env().data_path)
        self.providers = ProviderCache()
        self.messages = MessagesCache()

    def receiveMsg_RunModelCall(self, msg: RunModelCall, sender: Any) -> None:
        self.start_effect(msg, sender)

    def runs_at_once(self, msg: RunModelCall) -> bool:
        return model_runs_at_once(msg, self.providers, os.environ)

    def run(self, msg: RunModelCall, cancel: threading.Event) -> EffectDone:
        from brain.models import ModelCallError

        def on_delta(text: str) -> None:
            if text:
                self.live.model_delta(msg.session_id, msg.started, text)

        try:
            provider = self.providers.get(msg.model["name"], msg.model, os.environ)
            try:
                request = self.messages.request(msg.session_id, msg.request)
            except ValueError as exc:  # before anything was sent: the call did not happen
                raise ModelCallError("error", f"unreadable messages ({exc})") from exc
            result = provider.call(request, on_delta, cancel)
        except ModelCallError as exc:
            error: dict[str, Any] = {"message": exc.message}
            if exc.status is not None:
                error["status"] = exc.status
            return EffectDone(msg.session_id, msg.started, exc.outcome, error=error)
        return EffectDone(msg.session_id, msg.started, Outcome.OK, result=result)
