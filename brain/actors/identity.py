"""Which data dir an actor system belongs to, and where its port is written down.

A Thespian admin is found by its TCP port alone: any process that calls `ActorSystem()` with a
port some admin listens on joins that admin. Two Brains on one port would share one set of
actors, and the second Brain's sessions would be written into the first one's data dir. So each
actor system carries an identity, its data dir plus the start's random boot id, as a capability
of its admin. The boot process and every web worker ask the admin for its status (a read-only
Thespian request) before they use it, and refuse an admin whose identity is not theirs.

The boot process also writes `run/actor.json` under the data dir: port, bind address and
identity of the running actor system, for web workers started without them and for operator
tools. It is removed when the actor system stops; a stale one (after a crash) is overwritten.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from brain.actors.thespian.endpoint import admin_address
from brain.durable_dirs import make_dirs_durable, replace_durably
from brain.settings import Settings

IDENTITY_CAPABILITY = "Brain Identity"
STATUS_TIMEOUT_SECS = 5.0
ACTOR_PORT_REFUSED = 3
"""Exit code of the boot process when the actor port is taken or held by another actor system;
`brain serve` turns it into its own exit code 2 (an operator's mistake, not a crash)."""


class ForeignActorSystem(RuntimeError):
    """The admin on our actor port belongs to another data dir (or is not Brain's at all)."""

    def __init__(self, port: int, theirs: str | None) -> None:
        self.port = port
        self.theirs = theirs
        who = f"another Brain ({theirs})" if theirs else "another actor system, not this Brain's"
        super().__init__(f"actor port {port} is served by {who}")


def identity_of(data_path: Path, boot_id: str | None) -> str:
    return f"{data_path} boot={boot_id or '-'}"


def settings_identity(settings: Settings) -> str:
    return identity_of(settings.data_path, settings.boot_id)


def admin_identity(asys: Any, timeout: float = STATUS_TIMEOUT_SECS) -> str | None:
    """The identity the admin `asys` is joined to answers with; None if it has none."""
    from thespian.actors import Thespian_StatusReq, Thespian_SystemStatus

    admin = admin_address(asys)
    answer = asys.ask(admin, Thespian_StatusReq(), timeout)
    if not isinstance(answer, Thespian_SystemStatus):
        return None
    value = answer.capabilities.get(IDENTITY_CAPABILITY)
    return value if isinstance(value, str) else None


def require_own_admin(asys: Any, expected: str, port: int) -> None:
    """Raise ForeignActorSystem unless the admin `asys` reached answers with `expected`."""
    theirs = admin_identity(asys)
    if theirs != expected:
        raise ForeignActorSystem(port, theirs)


@dataclass(frozen=True)
class ActorRecord:
    """What `run/actor.json` says about the actor system serving a data dir."""

    actor_port: int
    actor_bind: str
    identity: str
    boot_pid: int


def run_record_path(data_path: Path) -> Path:
    return data_path / "run" / "actor.json"


def write_run_record(settings: Settings, port: int) -> None:
    path = run_record_path(settings.data_path)
    make_dirs_durable(path.parent)
    body = {"actor_port": port, "actor_bind": settings.actor_bind,
            "identity": settings_identity(settings), "boot_pid": os.getpid()}
    # Readers see the old record or the new one, never half of one, even after a power cut.
    replace_durably(path, (json.dumps(body, indent=1) + "\n").encode())


def read_run_record(data_path: Path) -> ActorRecord | None:
    try:
        body = json.loads(run_record_path(data_path).read_text())
        return ActorRecord(int(body["actor_port"]), str(body["actor_bind"]),
                           str(body["identity"]), int(body["boot_pid"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def remove_run_record(data_path: Path) -> None:
    record = read_run_record(data_path)
    if record is not None and record.boot_pid == os.getpid():
        run_record_path(data_path).unlink(missing_ok=True)
