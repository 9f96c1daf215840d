"""An exiting actor keeps open the socket Thespian still watches.

Thespian ignores what receiveMessage returns for ActorExitRequest, so while it drains the actor's
goodbye messages it still selects on the bridge socket of the last ThespianWatch. Closing that
socket on exit let Thespian's next outgoing socket take the same fd number and register it twice
in one selector (`KeyError: '19 (FD 19) is already registered'`), aborting the drain.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from thespian.actors import ActorExitRequest, ThespianWatch

from brain.actors.executors.environment import EnvironmentExecutor
from brain.actors.executors.model import ModelExecutor
from brain.actors.executors.tool import ToolExecutor
from brain.actors.session.actor import SessionActor

BRIDGED_ACTORS = [SessionActor, ModelExecutor, ToolExecutor, EnvironmentExecutor]


@pytest.mark.parametrize("actor_class", BRIDGED_ACTORS, ids=lambda cls: cls.__name__)
def test_the_watched_socket_survives_actor_exit_request(
        actor_class: type, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BRAIN_DATA_DIR", str(tmp_path))
    actor = actor_class()
    watch = actor.receiveMessage("an unknown message", None)
    assert isinstance(watch, ThespianWatch) and watch.filenos
    watched = {fd: os.fstat(fd).st_ino for fd in watch.filenos}

    actor.receiveMessage(ActorExitRequest(), None)

    for fd, inode in watched.items():
        try:
            still = os.fstat(fd).st_ino
        except OSError:
            pytest.fail(f"fd {fd} was closed on ActorExitRequest while Thespian still watches it")
        assert still == inode, f"fd {fd} now names another file"
