"""The EnvironmentExecutor actor: performs Environment operations already journaled.

One per actor system, created at boot. Setup, detach and teardown of a session's Environments
run here in threads through `brain.environments`, never inside the session actor; the outcome
goes back to the session, which commits it before it answers its client. Never retried.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from thespian.actors import ActorTypeDispatcher, WatchMessage

from brain.actors.bridge import ThreadBridge
from brain.actors.messages import EnvironmentOpDone, RunEnvironmentOp
from brain.actors.trace import trace_message
from brain.settings import Settings

log = logging.getLogger(__name__)


class EnvironmentExecutor(ActorTypeDispatcher):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.bridge = ThreadBridge()
        self.settings = Settings.from_env()

    def receiveMessage(self, message: Any, sender: Any) -> Any:
        super().receiveMessage(message, sender)
        return self.bridge.watch()

    def receiveMsg_RunEnvironmentOp(self, msg: RunEnvironmentOp, sender: Any) -> None:
        trace_message("environment_executor", msg)
        threading.Thread(target=self._run, args=(msg,), daemon=True,
                         name=f"env-{msg.session_id}-{msg.started}").start()

    def receiveMsg_WatchMessage(self, msg: WatchMessage, sender: Any) -> None:
        for reply_to, done in self.bridge.drain():
            self.send(reply_to, done)

    def _run(self, msg: RunEnvironmentOp) -> None:
        from brain.environments import EnvironmentOpError, open_environment, run_environment_op

        root = self.settings.data_path / "environments" / msg.session_id / msg.environment["name"]
        try:
            environment = open_environment(msg.environment, root)
            result = run_environment_op(environment, msg.op, msg.request, None, threading.Event())
            done = EnvironmentOpDone(msg.session_id, msg.started, result=result)
        except EnvironmentOpError as exc:
            done = EnvironmentOpDone(msg.session_id, msg.started,
                                     error={"outcome": exc.outcome, "message": exc.message})
        except Exception as exc:
            log.exception("environment op %s/%s failed inside Brain", msg.session_id,
                          msg.started)
            done = EnvironmentOpDone(msg.session_id, msg.started,
                                     error={"outcome": "unknown",
                                            "message": f"internal error ({type(exc).__name__})"})
        self.bridge.post((msg.reply_to, done))
