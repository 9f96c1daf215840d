"""The ModelExecutor actor: performs model calls the session actors have already journaled.

One executor per actor system (globalName). Each call runs in its own thread, because a provider
call blocks for seconds; the outcome comes back through the bridge and is sent to the session
actor, which commits it before the Agentloop sees it. The executor never retries: a call it was
sent is attempted exactly once.
"""

from __future__ import annotations

import logging
import os
import threading
from typing import Any

from thespian.actors import ActorTypeDispatcher, WatchMessage

from brain.actors.bridge import ThreadBridge
from brain.actors.messages import CancelEffect, ModelCallDone, RunModelCall
from brain.actors.trace import trace_message
from brain.live import LivePublisher
from brain.settings import Settings

log = logging.getLogger(__name__)


class ModelExecutor(ActorTypeDispatcher):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.bridge = ThreadBridge()
        self.cancels: dict[tuple[str, int], threading.Event] = {}
        self.live = LivePublisher(Settings.from_env().data_path)

    def receiveMessage(self, message: Any, sender: Any) -> Any:
        super().receiveMessage(message, sender)
        return self.bridge.watch()

    def receiveMsg_RunModelCall(self, msg: RunModelCall, sender: Any) -> None:
        trace_message("model_executor", msg)
        cancel = threading.Event()
        self.cancels[(msg.session_id, msg.started)] = cancel
        thread = threading.Thread(target=self._run, args=(msg, cancel),
                                  name=f"model-{msg.session_id}-{msg.started}", daemon=True)
        thread.start()

    def receiveMsg_CancelEffect(self, msg: CancelEffect, sender: Any) -> None:
        trace_message("model_executor", msg)
        cancel = self.cancels.get((msg.session_id, msg.started))
        if cancel is not None:
            cancel.set()

    def receiveMsg_WatchMessage(self, msg: WatchMessage, sender: Any) -> None:
        for reply_to, done in self.bridge.drain():
            self.cancels.pop((done.session_id, done.started), None)
            self.send(reply_to, done)

    def _run(self, msg: RunModelCall, cancel: threading.Event) -> None:
        from brain.models import ModelCallError, make_provider

        def on_delta(text: str) -> None:
            # Live-only: straight to the web workers, never journaled.
            if text:
                self.live.model_delta(msg.session_id, msg.started, text)

        try:
            provider = make_provider(msg.model["name"], msg.model, os.environ)
            result = provider.call(msg.request, on_delta, cancel)
        except ModelCallError as exc:
            error = {"outcome": exc.outcome, "message": str(exc.message)}
            if getattr(exc, "status", None) is not None:
                error["status"] = exc.status
            done = ModelCallDone(msg.session_id, msg.started, error=error)
        except Exception as exc:
            log.exception("model call %s/%s failed inside Brain", msg.session_id, msg.started)
            done = ModelCallDone(msg.session_id, msg.started,
                                 error={"outcome": "unknown",
                                        "message": f"internal error ({type(exc).__name__})"})
        else:
            done = ModelCallDone(msg.session_id, msg.started, result=result)
        self.bridge.post((msg.reply_to, done))
