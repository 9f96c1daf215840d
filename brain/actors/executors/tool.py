"""The ToolExecutor actor: performs Tool calls the session actors have already journaled.

One per actor system, created at boot. Each call runs in its own thread through `brain.tools`,
which never retries; the EffectDone goes back to the session actor, which commits it before the
Agentloop sees it. Environment-routed Tools reach the session's local Environment directory, or
the host serving a `host` Environment; `host` Tools go to the HostDispatcher (host_calls.py).
"""

from __future__ import annotations

import threading
from typing import Any

from brain.actors.executors.host_calls import HostCallingExecutor
from brain.actors.park_at_once import tool_runs_at_once
from brain.effects import Outcome
from brain.protocol.effects import EffectDone, RunToolCall
from brain.settings import Settings


class ToolExecutor(HostCallingExecutor):
    thread_prefix = "tool"
    trace_name = "tool_executor"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.settings = Settings.from_env()

    def receiveMsg_RunToolCall(self, msg: RunToolCall, sender: Any) -> None:
        self.start_effect(msg, sender)

    def runs_at_once(self, msg: RunToolCall) -> bool:
        return tool_runs_at_once(msg)

    def run(self, msg: RunToolCall, cancel: threading.Event) -> EffectDone:
        from brain.environments import EnvironmentOpError, open_environment, run_environment_op
        from brain.tools import run_tool

        environments = {env["name"]: env for env in msg.environments}
        host_runner = self.host_runner(msg.session_id, msg.started)

        def environment_runner(name: str, op: str, request: dict, deadline: Any,
                               cancel_event: threading.Event) -> dict:
            spec = environments.get(name)
            if spec is None:
                raise EnvironmentOpError("error", f"Environment {name!r} is not set up")
            root = self.settings.environments_path / msg.session_id / name
            return run_environment_op(open_environment(spec, root, host_runner), op, request,
                                      deadline, cancel_event)

        done = run_tool(msg.tool, msg.invocation, session_id=msg.session_id,
                        sequence=msg.started, deadline=msg.deadline, cancel=cancel,
                        environment_runner=environment_runner, host_runner=host_runner).to_dict()
        result = {"content": done["content"], "is_error": done["is_error"]}
        error = None
        if done["outcome"] != Outcome.OK:
            content = done["content"]
            error = {"message": content if isinstance(content, str) else "the Tool call failed"}
        return EffectDone(msg.session_id, msg.started, Outcome(done["outcome"]), result=result,
                          error=error, events=tuple(done["events"]))
