"""The ModelExecutor actor: performs model calls the session actors have already journaled.

One per actor system, created at boot. Each call runs in its own thread, because a provider
call blocks for seconds; the outcome goes to the session actor, which commits it before the
Agentloop sees it. The executor never retries: a call it was sent is attempted exactly once.
Live text deltas go straight to the web workers (brain/live/), never to the journal.
"""

from __future__ import annotations

import logging
import os
import threading
from typing import Any

from brain.actors.bridge import ExecutorActor
from brain.actors.messages import ModelCallDone, RunModelCall
from brain.live import LivePublisher
from brain.settings import Settings

log = logging.getLogger(__name__)


class ModelExecutor(ExecutorActor):
    thread_prefix = "model"
    trace_name = "model_executor"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.live = LivePublisher(Settings.from_env().data_path)

    def receiveMsg_RunModelCall(self, msg: RunModelCall, sender: Any) -> None:
        self.start_effect(msg)

    def run(self, msg: RunModelCall, cancel: threading.Event) -> ModelCallDone:
        from brain.models import ModelCallError, make_provider

        def on_delta(text: str) -> None:
            if text:
                self.live.model_delta(msg.session_id, msg.started, text)

        try:
            provider = make_provider(msg.model["name"], msg.model, os.environ)
            result = provider.call(msg.request, on_delta, cancel)
        except ModelCallError as exc:
            error = {"outcome": exc.outcome, "message": str(exc.message)}
            if getattr(exc, "status", None) is not None:
                error["status"] = exc.status
            return ModelCallDone(msg.session_id, msg.started, error=error)
        except Exception as exc:
            log.exception("model call %s/%s failed inside Brain", msg.session_id, msg.started)
            return ModelCallDone(msg.session_id, msg.started,
                                 error={"outcome": "unknown",
                                        "message": f"internal error ({type(exc).__name__})"})
        return ModelCallDone(msg.session_id, msg.started, result=result)
