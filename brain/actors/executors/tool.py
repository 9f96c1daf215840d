"""The ToolExecutor actor: performs Tool calls the session actors have already journaled.

One per actor system, created at boot. Each call runs in its own thread through `brain.tools`,
which never retries; the EffectDone goes back to the session actor, which commits it before the
Agentloop sees it. Environment-routed Tools reach the session's local Environment directory, or
the host serving a `host` Environment; `host` Tools go to the HostDispatcher (host_calls.py).
`mcp` Tools go over the MCP connections this actor's process holds (brain/tools/mcp/hub.py,
made at the first MCP message), which also list a new session's servers and hold its
credentials in memory (ListMcpTools; forgotten on ForgetMcpSession).
"""

from __future__ import annotations

import threading
from typing import Any

from brain.actors.executors.host_calls import HostCallingExecutor
from brain.actors.park_at_once import tool_runs_at_once
from brain.effects import Outcome
from brain.protocol.effects import EffectDone, RunToolCall
from brain.protocol.mcp import ForgetMcpSession, ListMcpTools, McpToolsListed
from brain.settings import Settings


class ToolExecutor(HostCallingExecutor):
    thread_prefix = "tool"
    trace_name = "tool_executor"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.settings = Settings.from_env()
        self._mcp: Any = None  # (Hub, CredentialStore), made at the first MCP message
        self._live: Any = None  # LivePublisher for MCP progress, made at the first MCP call

    def mcp(self) -> Any:
        if self._mcp is None:
            from brain.tools.mcp.credentials import CredentialStore
            from brain.tools.mcp.hub import Hub

            self._mcp = (Hub(), CredentialStore())
        return self._mcp

    def receiveMsg_ListMcpTools(self, msg: ListMcpTools, sender: Any) -> None:
        hub, store = self.mcp()
        store.hold(msg.session_id, msg.credentials)

        def body() -> None:
            from brain.tools.mcp.create import ServerDown
            from brain.tools.mcp.listing import list_servers

            try:
                listings = list_servers(hub, msg.servers, msg.session_id, msg.credentials)
                answer = McpToolsListed(msg.session_id, listings)
            except ServerDown as down:
                answer = McpToolsListed(msg.session_id, {}, down.server, str(down))
            except Exception as exc:  # the loop itself failed: the create must not go on
                answer = McpToolsListed(msg.session_id, {}, "(all)",
                                        f"MCP listing failed ({type(exc).__name__})")
            self.bridge.post(("mcp-listed", sender, answer))

        self.threads.submit(body, name=f"mcp-list-{msg.session_id}")

    def receiveMsg_ForgetMcpSession(self, msg: ForgetMcpSession, sender: Any) -> None:
        if self._mcp is not None:
            hub, store = self._mcp
            store.forget(msg.session_id)
            hub.forget_session(msg.session_id)

    def handle_posted(self, item: Any) -> Any:
        if isinstance(item, tuple) and item and item[0] == "mcp-listed":
            self.send(item[1], item[2])
            return None
        return super().handle_posted(item)

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
                        environment_runner=environment_runner, host_runner=host_runner,
                        mcp_runner=self._mcp_runner(msg)).to_dict()
        result = {"content": done["content"], "is_error": done["is_error"]}
        error = None
        if done["outcome"] != Outcome.OK:
            content = done["content"]
            error = {"message": content if isinstance(content, str) else "the Tool call failed"}
        return EffectDone(msg.session_id, msg.started, Outcome(done["outcome"]), result=result,
                          error=error, events=tuple(done["events"]))

    def _mcp_runner(self, msg: RunToolCall) -> Any:
        if msg.tool.get("route") != "mcp":
            return None
        hub, store = self.mcp()
        if self._live is None:
            from brain.live import LivePublisher

            self._live = LivePublisher(self.settings.data_path)
        live = self._live

        def progress(value: dict[str, Any]) -> None:
            live.tool_progress(msg.session_id, msg.started, value)

        def run(tool: dict, value: Any, until: Any, cancel: threading.Event) -> Any:
            from brain.tools.mcp.call import call_mcp_tool

            server = tool.get("server") or {}
            return call_mcp_tool(hub, tool, value, session_id=msg.session_id,
                                 sequence=msg.started,
                                 credentials=store.get(msg.session_id, server.get("name")),
                                 until=until, cancel=cancel, progress=progress)

        return run
