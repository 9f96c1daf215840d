"""The ToolExecutor actor: performs Tool calls the session actors have already journaled.

One per actor system (globalName). Each call runs in its own thread through `brain.tools`,
which never retries; the outcome goes back to the session actor, which commits it before the
Agentloop sees it. Environment-routed Tools reach the session's local Environment directory.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from thespian.actors import ActorTypeDispatcher, WatchMessage

from brain.actors.bridge import ThreadBridge
from brain.actors.messages import CancelEffect, RunToolCall, ToolCallDone
from brain.actors.trace import trace_message
from brain.settings import Settings

log = logging.getLogger(__name__)


class ToolExecutor(ActorTypeDispatcher):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.bridge = ThreadBridge()
        self.cancels: dict[tuple[str, int], threading.Event] = {}
        self.settings = Settings.from_env()

    def receiveMessage(self, message: Any, sender: Any) -> Any:
        super().receiveMessage(message, sender)
        return self.bridge.watch()

    def receiveMsg_RunToolCall(self, msg: RunToolCall, sender: Any) -> None:
        trace_message("tool_executor", msg)
        cancel = threading.Event()
        self.cancels[(msg.session_id, msg.started)] = cancel
        threading.Thread(target=self._run, args=(msg, cancel),
                         name=f"tool-{msg.session_id}-{msg.started}", daemon=True).start()

    def receiveMsg_CancelEffect(self, msg: CancelEffect, sender: Any) -> None:
        trace_message("tool_executor", msg)
        cancel = self.cancels.get((msg.session_id, msg.started))
        if cancel is not None:
            cancel.set()

    def receiveMsg_WatchMessage(self, msg: WatchMessage, sender: Any) -> None:
        for reply_to, done in self.bridge.drain():
            self.cancels.pop((done.session_id, done.started), None)
            self.send(reply_to, done)

    def _run(self, msg: RunToolCall, cancel: threading.Event) -> None:
        from brain.environments import open_environment, run_environment_op
        from brain.tools import run_tool

        environments = {env["name"]: env for env in msg.environments}

        def environment_runner(name: str, op: str, request: dict, deadline: Any,
                               cancel_event: threading.Event) -> dict:
            from brain.environments import EnvironmentOpError

            spec = environments.get(name)
            if spec is None:
                raise EnvironmentOpError("error", f"Environment {name!r} is not set up")
            root = self.settings.data_path / "environments" / msg.session_id / name
            return run_environment_op(open_environment(spec, root), op, request, deadline,
                                      cancel_event)

        try:
            outcome = run_tool(msg.tool, msg.invocation, session_id=msg.session_id,
                               sequence=msg.started, deadline=msg.deadline, cancel=cancel,
                               environment_runner=environment_runner).to_dict()
        except Exception as exc:
            log.exception("tool call %s/%s failed inside Brain", msg.session_id, msg.started)
            outcome = {"content": f"internal error ({type(exc).__name__})", "is_error": True,
                       "outcome": "unknown", "events": []}
        self.bridge.post((msg.reply_to, ToolCallDone(msg.session_id, msg.started, outcome)))
