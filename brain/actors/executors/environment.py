"""The EnvironmentExecutor actor: performs Environment operations already journaled.

One per actor system, created at boot. Setup, detach and teardown of a session's Environments
run here in threads through `brain.environments`, never inside the session actor; the EffectDone
goes back to the session, which commits it before it answers its client. Never retried. A
`host` Environment's op goes to the HostDispatcher (host_calls.py) with the deadline
BRAIN_HOST_ENVIRONMENT_SECS, so a create, end or delete never waits for ever on a missing host.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from brain.actors.executors.host_calls import HostCallingExecutor
from brain.effects import Outcome
from brain.protocol.effects import EffectDone, RunEnvironmentOp
from brain.settings import Settings


class EnvironmentExecutor(HostCallingExecutor):
    thread_prefix = "env"
    trace_name = "environment_executor"
    parks = False  # creation, ending and deletion hold their session's actor: nothing suspends

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.settings = Settings.from_env()

    def receiveMsg_RunEnvironmentOp(self, msg: RunEnvironmentOp, sender: Any) -> None:
        self.start_effect(msg, sender)

    def run(self, msg: RunEnvironmentOp, cancel: threading.Event) -> EffectDone:
        from brain.environments import EnvironmentOpError, open_environment, run_environment_op

        root = self.settings.environments_path / msg.session_id / msg.environment["name"]
        deadline = None
        if msg.environment.get("kind") == "host":
            deadline = time.time() + self.settings.host_environment_secs
        try:
            environment = open_environment(msg.environment, root,
                                           self.host_runner(msg.session_id, msg.started))
            result = run_environment_op(environment, msg.op, msg.request, deadline, cancel)
        except EnvironmentOpError as exc:
            return EffectDone(msg.session_id, msg.started, exc.outcome,
                              error={"message": exc.message})
        return EffectDone(msg.session_id, msg.started, Outcome.OK, result=result)
