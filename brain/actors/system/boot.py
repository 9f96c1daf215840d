"""The actor-system process: `python -m brain.actors.system.boot`.

Started by `brain serve` as a plain (non-gevent) process, so that the Thespian admin is forked
from here and never from a gunicorn worker or master (stack hazard 1). It creates the
ActorSupervisor, which creates the Registry and every shared actor and replaces any of them that
dies; asks the registry to recover sessions a crash left running, prints `ready <actor port>` and
waits for SIGTERM, then shuts the actor system down. It exits non-zero at once (and
`brain serve` with it) when an actor that cannot be replaced dies: the registry, or the
supervisor itself. With BRAIN_ACTOR_PORT unset it picks a free port
itself, just before the admin binds it; it never joins an admin of another data dir
(brain/actors/identity.py).
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from brain.actors.actor_secret import ActorSecretError, ensure_actor_secret
from brain.actors.convention import (
    convention_capabilities,
    member_requirements,
    prepare_convention_checkins,
    registry_global_name,
    roster_global_name,
    supervisor_global_name,
)
from brain.actors.data_dir_lock import DataDirTaken, hold_data_dir
from brain.actors.identity import (
    ACTOR_PORT_REFUSED,
    IDENTITY_CAPABILITY,
    ForeignActorSystem,
    remove_run_record,
    require_own_admin,
    settings_identity,
    write_run_record,
)
from brain.actors.registry.recovery_hand_over import hand_over_recoveries
from brain.actors.thespian.auth import authenticate_actor_messages
from brain.actors.thespian.confine import confine_thespian
from brain.actors.thespian.exits import tell_how_children_exit
from brain.actors.thespian.fit import ThespianMismatch, check_thespian
from brain.actors.thespian.forwarded_creates import patch_forwarded_creates
from brain.actors.thespian.inherited_sockets import let_go_of_inherited_listeners
from brain.actors.thespian.no_daemon import keep_admin_in_this_process_group
from brain.actors.thespian.proctitle import name_thespian_processes
from brain.actors.thespian.speedups import speed_up_message_path
from brain.data_dir import keep_files_private
from brain.journal.statuses import session_statuses
from brain.logs import configure_root, thespian_log_defs
from brain.ports import free_port, local_host, port_is_free
from brain.procstat import ProcStat, all_stats, read_stat
from brain.protocol.messages import (
    WEBHOOK_EXECUTOR_GLOBAL_NAME,
    FillPool,
    ProcessIs,
    ResumeWebhooks,
    ServerMustStop,
    SharedActorsStarted,
    StartSharedActors,
    WhichProcess,
)
from brain.sessions.scan import start_up_scan
from brain.settings import Settings
from brain.tracing.otel import clear_kept_traceparents

THESPIAN_LOGGING = {
    "version": 1,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"stderr": {"class": "logging.StreamHandler", "formatter": "plain",
                            "level": "WARNING"}},
    "root": {"handlers": ["stderr"], "level": "WARNING"},
}


def preload_for_actors() -> None:
    """Import what every actor needs before the admin forks, so forks inherit it.

    A session actor is forked per open session; importing wasmtime and the providers in each
    fork cost ~130 ms per open. Importing creates no wasmtime Engine and no threads, so the
    fork hazard (stack hazard 4) does not apply: engines are still made after the fork.
    """
    import brain.actors.session.actor  # noqa: F401
    import brain.agentloop.runtime  # noqa: F401
    import brain.config  # noqa: F401  (a pooled actor's warm-up reads the configuration)
    import brain.environments  # noqa: F401
    import brain.host  # noqa: F401
    import brain.models  # noqa: F401
    import brain.tools  # noqa: F401


def precompile_agentloops(settings: Settings) -> subprocess.Popen[bytes] | None:
    """Start compiling the configured Agentloop components that are not in the machine's
    cache, in a child process, in the background: the server starts meanwhile, /readyz names
    what is still compiling (brain/agentloop/preparing.py), and an actor that needs one waits
    for it rather than compiling it again (brain/agentloop/compile_cache.py). Its
    announcements and summary go to this process's stderr, the server log."""
    from brain.actors.registry.forks import configured_modules
    from brain.actors.session.activation import wasm_cache_dir
    from brain.agentloop.precompile import child_command, needs_compiling
    from brain.agentloop.preparing import clear_status, status_path, write_status
    from brain.durable_dirs import make_dirs_durable

    cache_dir = wasm_cache_dir(settings)
    status = status_path(settings.data_path / "run")
    clear_status(status)
    try:
        make_dirs_durable(cache_dir)
        wanted = needs_compiling(list(configured_modules(settings)), cache_dir)
        if not wanted:
            return None
        write_status(status, wanted)  # before /readyz can be asked; the child rewrites it
        child = subprocess.Popen(child_command(wanted, cache_dir, status), stdout=sys.stderr,
                                 stdin=subprocess.DEVNULL)
    except Exception:
        clear_status(status)
        log.exception("compiling the Agentloop components failed; each compiles at first use")
        return None
    write_status_pid(status, child.pid)
    return child


def write_status_pid(status: Path, pid: int) -> None:
    """Name the child in the status file this process wrote, until the child rewrites it."""
    import json

    try:
        data = json.loads(status.read_text())
        data["pid"] = pid
        status.write_text(json.dumps(data))
    except (OSError, ValueError):
        pass


def start_shared_actors(asys: object, supervisor_name: str, registry_name: str
                        ) -> tuple[object, dict[str, object]]:
    """Create the ActorSupervisor, and through it the registry and every shared actor.

    The supervisor creates each with its global name, so the admin owns it (were a session
    actor, released after each turn, its parent, its release would kill it under every other
    session's feet), and Thespian tells the supervisor when it exits: it then replaces it and
    settles what it held (brain/actors/system/supervisor.py). Answered with every real address;
    the registry and the executors have theirs before this returns.
    """
    from brain.actors.system.supervisor import ActorSupervisor

    supervisor = asys.createActor(ActorSupervisor,  # type: ignore[attr-defined]
                                  globalName=supervisor_name)
    started = asys.ask(supervisor, StartSharedActors(registry_name),  # type: ignore[attr-defined]
                       SHARED_START_TIMEOUT_SECS)
    if not isinstance(started, SharedActorsStarted):
        raise RuntimeError("the shared actors did not start in time")
    return supervisor, started.addresses


SHARED_START_TIMEOUT_SECS = 60.0


def watch_convention(asys: object, member: str) -> None:
    """A member's Roster follows the convention's registrations from before `ready`."""
    from brain.actors.roster import WATCH, Roster

    roster = asys.createActor(Roster,  # type: ignore[attr-defined]
                              targetActorRequirements=member_requirements(member),
                              globalName=roster_global_name(member))
    asys.ask(roster, WATCH, 10.0)  # type: ignore[attr-defined]


POOL_FILL_TIMEOUT_SECS = 60.0


def fill_session_pool(asys: object, registry: object) -> None:
    """Fork the warm session actors before `ready`, so the first requests find them waiting.

    Without an answer in time Brain still starts: the registry forks on demand and refills.
    """
    answer = asys.ask(registry, FillPool(), POOL_FILL_TIMEOUT_SECS)  # type: ignore[attr-defined]
    if answer != "filled":
        print("brain serve: the session actor pool was not filled in time", file=sys.stderr,
              flush=True)


def actor_capabilities(settings: Settings, port: int) -> dict[str, object]:
    """The admin's capabilities: its port, whose data dir it serves (brain/actors/identity),
    and, for a member of a convention, its name, front end and leader (brain/actors/convention)."""
    return {"Admin Port": port, IDENTITY_CAPABILITY: settings_identity(settings),
            **convention_capabilities(settings)}


def reap_exited_children() -> None:
    """Reap the helper Thespian forks to daemonize its admin, which nobody else waits for.

    Thespian starts the admin as a multiprocessing child that forks the real admin and exits;
    it then detaches that child, so it stayed `<defunct>` under this process for its lifetime.
    This process starts no other children, so every exited child here is such a helper.
    """
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


log = logging.getLogger(__name__)

SHUTDOWN_TIMEOUT_SECS = 12.0
LEFTOVER_GRACE_SECS = 3.0
"""How long actor processes get to exit by themselves once the admin has gone."""


def shut_down(asys: object, bind: str, port: int) -> None:
    """`asys.shutdown()`, returning as soon as the admin has gone.

    Thespian waits up to 10 s for the admin's `SystemShutdownCompleted`, and that reply is
    sometimes lost (the admin sends it as it exits; measured: 2 of 6 stops took 10 s with every
    actor already gone). The admin closes its port only when it exits, so a refused connection
    ends the wait.
    """
    stopper = threading.Thread(target=asys.shutdown, daemon=True)  # type: ignore[attr-defined]
    stopper.start()
    deadline = time.monotonic() + SHUTDOWN_TIMEOUT_SECS
    while stopper.is_alive() and time.monotonic() < deadline:
        stopper.join(0.2)
        try:
            with socket.create_connection((local_host(bind), port), timeout=1.0):
                pass
        except OSError:
            return  # the admin has exited


def actor_processes() -> list[ProcStat]:
    """The actor system's processes: this process group's members titled `brain: ...` (the
    admin, its logger and every actor; gunicorn and this boot process have other titles)."""
    found = []
    for proc in all_stats():
        if proc.pgrp != os.getpgrp() or proc.pid == os.getpid() or not proc.running:
            continue
        try:
            with open(f"/proc/{proc.pid}/cmdline", "rb") as cmdline:
                if cmdline.read(7) == b"brain: ":
                    found.append(proc)
        except OSError:
            continue
    return found


def kill_leftovers(procs: list[ProcStat], grace_secs: float = LEFTOVER_GRACE_SECS) -> None:
    """SIGKILL what of `procs` outlived the actor system's shutdown (an actor whose exit
    request was lost with a dying admin). With the supervisor dead nobody else would: they
    would live on as orphans serving nothing. A pid is killed only if it is still the same
    process (its start time)."""
    deadline = time.monotonic() + grace_secs
    while True:
        alive = [p for p in procs if _same_process_running(p)]
        if not alive or time.monotonic() >= deadline:
            break
        time.sleep(0.1)
    for proc in alive:
        log.warning("actor process %d outlived the actor system's shutdown; killing it", proc.pid)
        try:
            os.kill(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _same_process_running(proc: ProcStat) -> bool:
    try:
        now = read_stat(proc.pid)
    except OSError:
        return False
    return now.start_time == proc.start_time and now.running


def process_of(asys: object, actor: object) -> ProcStat | None:
    """The process of `actor` (it answers WhichProcess), to watch it from here."""
    answer = asys.ask(actor, WhichProcess(), 10.0)  # type: ignore[attr-defined]
    if not isinstance(answer, ProcessIs):
        return None
    try:
        return read_stat(answer.pid)
    except OSError:
        return None


SERVER_MUST_STOP = 3
"""The boot process's exit code when an actor that cannot be replaced died."""


def server_must_stop(reason: str) -> int:
    print(f"brain serve: {reason}", file=sys.stderr, flush=True)
    return SERVER_MUST_STOP


def refuse(message: str) -> int:
    print(f"brain serve: {message}; refusing to start", file=sys.stderr, flush=True)
    return ACTOR_PORT_REFUSED


def main() -> int:
    # Ctrl-C reaches every process of the group; stopping is `brain serve`'s decision (it
    # drains the web first, then sends SIGTERM here). The admin and the logger, forked below,
    # inherit the ignored SIGINT; actors install Thespian's own handlers.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    keep_files_private()  # inherited from `brain serve`/`brain actors`; set again if run alone
    settings = Settings.from_env()
    configure_root(logging.WARNING)
    prepare_convention_checkins(settings)  # before Thespian's admin module is imported
    try:
        # every patch below fits the installed Thespian (brain/actors/thespian/fit.py)
        check_thespian()
    except ThespianMismatch as exc:
        return refuse(str(exc))
    confine_thespian(settings.actor_bind, convention=settings.member is not None)
    speed_up_message_path()  # the admin and every actor are forks of this process
    tell_how_children_exit()  # a supervisor's exit notices name the pid and the signal
    try:  # every frame signed, and checked before it is unpickled (brain/actors/thespian/auth.py)
        authenticate_actor_messages(ensure_actor_secret(settings))
    except ActorSecretError as exc:
        return refuse(str(exc))
    keep_admin_in_this_process_group()
    name_thespian_processes()
    try:
        owner = hold_data_dir(settings.data_path)  # noqa: F841 - held until this process exits
    except DataDirTaken as exc:
        return refuse(str(exc))
    port = settings.actor_port or free_port(settings.actor_bind)
    if not port_is_free(settings.actor_bind, port):
        return refuse(f"actor port {port} (BRAIN_ACTOR_PORT) is already in use")
    os.environ["BRAIN_ACTOR_PORT"] = str(port)  # what every actor's Settings then reads
    preload_for_actors()
    precompile_agentloops(settings)
    clear_kept_traceparents(settings.data_path)  # no turn suspended before a restart resumes
    if settings.member is not None:
        patch_forwarded_creates()
    from thespian.actors import ActorSystem

    # before the admin is forked (brain/actors/thespian/inherited_sockets.py)
    let_go_of_inherited_listeners()
    asys = ActorSystem("multiprocTCPBase", actor_capabilities(settings, port),
                       logDefs=thespian_log_defs(THESPIAN_LOGGING))
    reap_exited_children()
    try:
        require_own_admin(asys, settings_identity(settings), port)
    except ForeignActorSystem as exc:
        return refuse(str(exc))  # never shut down, nor use, an admin that is not ours
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        supervisor, services = start_shared_actors(asys, supervisor_global_name(settings.member),
                                                   registry_global_name(settings.member))
        registry = services[registry_global_name(settings.member)]
        watched = process_of(asys, supervisor)
        fill_session_pool(asys, registry)
        if settings.member is not None:
            watch_convention(asys, settings.member)
        scan = start_up_scan(session_statuses(settings.sessions_path))
        hand_over_recoveries(asys, registry, scan.in_flight)
        if scan.webhooks:  # after Services: the executor journals through the registry
            asys.tell(services[WEBHOOK_EXECUTOR_GLOBAL_NAME],  # type: ignore[attr-defined]
                      ResumeWebhooks(scan.webhooks))
        write_run_record(settings, port)
        print(f"ready {port}", flush=True)
        while not stop.is_set():
            told = asys.listen(1.0)  # type: ignore[attr-defined]
            if isinstance(told, ServerMustStop):
                return server_must_stop(told.reason)
            if watched is None or not _same_process_running(watched):
                return server_must_stop("the actor supervisor exited, so no actor that dies "
                                        "can be replaced; Brain stops so that it starts again")
            reap_exited_children()
    finally:
        remove_run_record(settings.data_path)
        actors = actor_processes()
        shut_down(asys, settings.actor_bind, port)
        kill_leftovers(actors)
    return 0


if __name__ == "__main__":
    sys.exit(main())
