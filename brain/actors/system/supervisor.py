"""The ActorSupervisor: creates the registry and every shared actor, and replaces any that dies.

Boot creates this one actor and asks it to start the rest (`StartSharedActors`). It creates each
with its global name, so the admin parents it (an exiting session actor cannot take it along) and
the web finds it by name, and Thespian tells the actor that asked for it, this one, when it
exits (`ChildActorExited`, which brain/actors/thespian/exits.py makes carry the pid and the exit
code or signal). Then, within the same message:

- It logs one line at error level (which actor, pid, how it ended) and counts the exit in
  `brain_actor_exits_total`.
- It creates a replacement under the same global name (the admin forgot the name before it
  told anyone of the exit), learns its real address from its answer to `WhichProcess`, and hands
  every user the new address with `SharedActorReplaced`. The registry then settles the work the
  dead actor held: every effect of its kinds a session still waits for ends `unknown`, never
  sent again (brain/actors/registry/lost_effects.py); executors settle host calls a dead
  HostDispatcher
  held; a new webhook executor is handed the deliveries the journals hold pending.
- The registry itself is not replaced: the placement of sessions, the admission backlog and the
  suspended turns live in it, and no other actor holds a copy to rebuild them from while turns
  run. Its death is told to boot (`ServerMustStop`), which exits non-zero with one line, and
  `brain serve` with it, so the service manager starts Brain again and the restart recovers
  every session from its journal.

Addresses go out only once they are real (answered `WhichProcess`): a pending address, the kind
`createActor` returns inside an actor, cannot be sent to another actor.
"""

from __future__ import annotations

import logging
from typing import Any

from thespian.actors import ChildActorExited

from brain.actors.thespian.exit_status import exit_status
from brain.actors.trace import TracedDispatcher
from brain.metrics import label_key
from brain.protocol.messages import (
    ENVIRONMENT_EXECUTOR_GLOBAL_NAME,
    HOST_DISPATCHER_GLOBAL_NAME,
    METRICS_GLOBAL_NAME,
    MODEL_EXECUTOR_GLOBAL_NAME,
    REGISTRY_GLOBAL_NAME,
    SHARED_ACTOR_ROLES,
    TOOL_EXECUTOR_GLOBAL_NAME,
    WEBHOOK_EXECUTOR_GLOBAL_NAME,
    ActorsAre,
    MetricsReport,
    ProcessIs,
    ResumeWebhooks,
    ServerMustStop,
    Services,
    SharedActorReplaced,
    SharedActorsStarted,
    StartSharedActors,
    WhereAre,
    WhichProcess,
)

log = logging.getLogger(__name__)

SERVICE_USERS = (MODEL_EXECUTOR_GLOBAL_NAME, TOOL_EXECUTOR_GLOBAL_NAME,
                 ENVIRONMENT_EXECUTOR_GLOBAL_NAME, WEBHOOK_EXECUTOR_GLOBAL_NAME)
"""Shared actors that send to other shared actors (the executors offer host calls to the
HostDispatcher, and send parked effects' outcomes and webhook delivery records to the
registry); like the registry, they get every address from the supervisor."""


def shared_actor_classes() -> dict[str, type]:
    """Global name → the actor class created under it (the registry aside)."""
    from brain.actors.executors.environment import EnvironmentExecutor
    from brain.actors.executors.host_dispatcher import HostDispatcher
    from brain.actors.executors.model import ModelExecutor
    from brain.actors.executors.tool import ToolExecutor
    from brain.actors.executors.webhook import WebhookExecutor
    from brain.actors.metrics_actor import MetricsActor

    return {MODEL_EXECUTOR_GLOBAL_NAME: ModelExecutor,
            TOOL_EXECUTOR_GLOBAL_NAME: ToolExecutor,
            ENVIRONMENT_EXECUTOR_GLOBAL_NAME: EnvironmentExecutor,
            HOST_DISPATCHER_GLOBAL_NAME: HostDispatcher,
            METRICS_GLOBAL_NAME: MetricsActor,
            WEBHOOK_EXECUTOR_GLOBAL_NAME: WebhookExecutor}


class ActorSupervisor(TracedDispatcher):
    trace_name = "supervisor"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._boot: Any = None  # who asked StartSharedActors: told when Brain must stop
        self._registry_name = REGISTRY_GLOBAL_NAME
        self._classes: dict[str, type] = {}
        self._addresses: dict[str, Any] = {}  # global name → real address, once it answered
        self._starting: set[str] = set()  # created, not yet answered WhichProcess
        self._replacing: set[str] = set()  # replacements among those

    # --- start ----------------------------------------------------------------------------

    def receiveMsg_StartSharedActors(self, msg: StartSharedActors, sender: Any) -> None:
        from brain.actors.registry.actor import Registry

        self._boot = sender
        self._registry_name = msg.registry
        self._classes = {msg.registry: Registry, **shared_actor_classes()}
        for name in self._classes:
            self._create(name)

    def _create(self, name: str) -> None:
        pending = self.createActor(self._classes[name], globalName=name)
        self._starting.add(name)
        self.send(pending, WhichProcess(name))

    def receiveMsg_ProcessIs(self, msg: ProcessIs, sender: Any) -> None:
        if msg.name not in self._starting:
            return
        self._starting.discard(msg.name)
        self._addresses[msg.name] = sender
        if msg.name in self._replacing:
            self._replacing.discard(msg.name)
            self._replaced(msg.name, msg.pid)
        elif not self._starting:
            self._hand_out()
            self.send(self._boot, SharedActorsStarted(dict(self._addresses)))

    def _hand_out(self, replaced: str | None = None) -> None:
        """The registry (for session actors) and the executors get every shared actor's
        address (the executors the registry's too): as Services at start, before boot prints
        `ready` and so before any session exists; as SharedActorReplaced naming `replaced`
        after a replacement (the new actor included: it gets its addresses this way)."""
        registry = self._addresses.get(self._registry_name)
        shared = self._shared_addresses()

        def told(addresses: dict[str, Any]) -> Services:
            return Services(addresses) if replaced is None \
                else SharedActorReplaced(addresses, replaced)

        for user in SERVICE_USERS:
            self.send(self._addresses[user], told({**shared, REGISTRY_GLOBAL_NAME: registry}))
        if registry is not None:
            self.send(registry, told(shared))

    def _shared_addresses(self) -> dict[str, Any]:
        return {name: address for name, address in self._addresses.items()
                if name != self._registry_name}

    def receiveMsg_WhereAre(self, msg: WhereAre, sender: Any) -> None:
        missing = tuple(SHARED_ACTOR_ROLES.get(name, "registry") for name in self._classes
                        if name not in self._addresses)
        if not self._classes:
            missing = ("registry", *SHARED_ACTOR_ROLES.values())  # not started (yet)
        self.send(sender, ActorsAre(dict(self._addresses), missing))

    # --- exits ----------------------------------------------------------------------------

    def receiveMsg_ChildActorExited(self, msg: ChildActorExited, sender: Any) -> None:
        name = next((n for n, address in self._addresses.items()
                     if address == msg.childAddress), None)
        if name is None:
            return  # not one of ours (or one already replaced)
        del self._addresses[name]
        how = exit_status(msg)
        if name == self._registry_name:
            reason = (f"the registry actor exited ({how}); Brain stops so that it starts "
                      "again and recovers every session from its journal")
            log.error("%s", reason)
            self.send(self._boot, ServerMustStop(reason))
            return
        log.error("the %s actor exited (%s); replacing it and settling what it held",
                  SHARED_ACTOR_ROLES[name], how)
        self._replacing.add(name)
        self._create(name)

    def _replaced(self, name: str, pid: int) -> None:
        log.warning("the %s actor is replaced (new pid %d)", SHARED_ACTOR_ROLES[name], pid)
        self._hand_out(replaced=name)
        exits = ("brain_actor_exits_total", label_key(actor=SHARED_ACTOR_ROLES[name]))
        self.send(self._addresses[METRICS_GLOBAL_NAME], MetricsReport("supervisor",
                                                                      {exits: 1.0}, {}))
        if name == WEBHOOK_EXECUTOR_GLOBAL_NAME:
            self._resume_webhooks()

    def _resume_webhooks(self) -> None:
        """The dead webhook executor's deliveries were in its memory only: the journals still
        hold each as pending, so the new one is handed them again (at least once)."""
        from brain.journal.statuses import session_statuses
        from brain.sessions.scan import start_up_scan
        from brain.settings import Settings

        deliveries = start_up_scan(session_statuses(Settings.from_env().sessions_path)).webhooks
        if deliveries:
            self.send(self._addresses[WEBHOOK_EXECUTOR_GLOBAL_NAME], ResumeWebhooks(deliveries))
