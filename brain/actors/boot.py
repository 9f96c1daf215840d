"""The actor-system process: `python -m brain.actors.boot`.

Started by `brain serve` as a plain (non-gevent) process, so that the Thespian admin is forked
from here and never from a gunicorn worker or master (stack-notes Hazard 1). It creates the
Registry, asks it to recover sessions a crash left running, prints `ready` and waits for
SIGTERM/SIGINT, then shuts the actor system down.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading

from brain.actors.confine import confine_thespian
from brain.actors.messages import (
    ENVIRONMENT_EXECUTOR_GLOBAL_NAME,
    HOST_DISPATCHER_GLOBAL_NAME,
    METRICS_GLOBAL_NAME,
    MODEL_EXECUTOR_GLOBAL_NAME,
    REGISTRY_GLOBAL_NAME,
    TOOL_EXECUTOR_GLOBAL_NAME,
    Recover,
    Services,
    ToSession,
)
from brain.actors.ownership import OWNER_QUESTION, OWNER_TIMEOUT_SECS, foreign_owner
from brain.sessions.scan import sessions_in_flight
from brain.settings import Settings
from brain.web.idempotency import new_boot_id

THESPIAN_LOGGING = {
    "version": 1,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"stderr": {"class": "logging.StreamHandler", "formatter": "plain",
                            "level": "WARNING"}},
    "root": {"handlers": ["stderr"], "level": "WARNING"},
}


def keep_admin_in_this_process_group() -> None:
    """Stop Thespian's admin from leaving Brain's process group.

    Thespian daemonizes its admin (`os.setsid()` and a double fork). Brain wants the opposite:
    every process it starts stays in the supervisor's process group, so a SIGKILL of that group
    (a crash, or a crash test) reaches the admin and every actor, and the supervisor (a child
    subreaper) inherits the double-forked admin instead of init. This process does nothing else
    that needs a new session, so `setsid` becomes a no-op here and in what it forks.
    """
    os.setsid = lambda: None


def preload_for_actors() -> None:
    """Import what every actor needs before the admin forks, so forks inherit it.

    A session actor is forked per open session; importing wasmtime and the providers in each
    fork cost ~130 ms per open. Importing creates no wasmtime Engine and no threads, so the
    fork hazard (stack-notes Hazard 4) does not apply: engines are still made after the fork.
    """
    import brain.actors.session  # noqa: F401
    import brain.agentloop.runtime  # noqa: F401
    import brain.environments  # noqa: F401
    import brain.host  # noqa: F401
    import brain.models  # noqa: F401
    import brain.tools  # noqa: F401


def create_singletons(asys: object) -> dict[str, object]:
    """Create every shared actor here, owned by the actor system itself.

    Thespian makes an actor the child of whoever creates it first, and an exiting actor takes
    its children with it. Were a session actor (released after each turn) the first to ask for
    an executor, its release would kill the executor under every other session's feet.
    """
    from brain.actors.environment_executor import EnvironmentExecutor
    from brain.actors.host_dispatcher import HostDispatcher
    from brain.actors.metrics_actor import MetricsActor
    from brain.actors.model_executor import ModelExecutor
    from brain.actors.tool_executor import ToolExecutor

    return {
        name: asys.createActor(actor, globalName=name)  # type: ignore[attr-defined]
        for actor, name in ((ModelExecutor, MODEL_EXECUTOR_GLOBAL_NAME),
                            (ToolExecutor, TOOL_EXECUTOR_GLOBAL_NAME),
                            (EnvironmentExecutor, ENVIRONMENT_EXECUTOR_GLOBAL_NAME),
                            (HostDispatcher, HOST_DISPATCHER_GLOBAL_NAME),
                            (MetricsActor, METRICS_GLOBAL_NAME))
    }


SERVICE_USERS = (TOOL_EXECUTOR_GLOBAL_NAME, ENVIRONMENT_EXECUTOR_GLOBAL_NAME)
"""Shared actors that send to other shared actors (the executors offer host calls to the
HostDispatcher); like the registry, they get every resolved address from here."""


def hand_out_services(asys: object, registry: object, services: dict[str, object]) -> None:
    """Tell the registry (for session actors) and the executors every shared actor's address.

    Nobody but this process resolves a global name (docs/decisions.md, Thespian). These tells
    leave before `ready` is printed, so before gunicorn starts and any session can exist; an
    executor that somehow has no dispatcher address yet fails a host call with `error`, unsent.
    """
    for user in SERVICE_USERS:
        asys.tell(services[user], Services(services))  # type: ignore[attr-defined]
    asys.tell(registry, Services(services))  # type: ignore[attr-defined]


def actor_capabilities(settings: Settings) -> dict[str, object]:
    return {"Admin Port": settings.actor_port}


def main() -> int:
    # The admin and every actor inherit this environment: the registry names this start.
    os.environ.setdefault("BRAIN_BOOT_ID", new_boot_id())
    settings = Settings.from_env()
    logging.basicConfig(level=logging.WARNING)
    confine_thespian(settings.actor_bind)
    keep_admin_in_this_process_group()
    preload_for_actors()
    from thespian.actors import ActorSystem

    from brain.actors.registry import Registry

    asys = ActorSystem("multiprocTCPBase", actor_capabilities(settings),
                       logDefs=THESPIAN_LOGGING)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    owned = False
    try:
        registry = asys.createActor(Registry, globalName=REGISTRY_GLOBAL_NAME)
        refusal = foreign_owner(asys.ask(registry, OWNER_QUESTION, OWNER_TIMEOUT_SECS),
                                settings, same_start=True)
        if refusal is not None:
            # ActorSystem() joined an admin that another process started: its actors would
            # run this Brain's commands against that Brain's data directory.
            print(f"brain: {refusal}", file=sys.stderr, flush=True)
            return 1
        owned = True
        hand_out_services(asys, registry, create_singletons(asys))
        for session_id in sessions_in_flight(settings.sessions_path):
            asys.tell(registry, ToSession(f"recover-{session_id}", session_id, Recover()))
        print("ready", flush=True)
        while not stop.wait(1.0):
            pass
    finally:
        if owned:  # another Brain's actor system is not ours to stop
            asys.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
