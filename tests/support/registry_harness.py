"""The real Registry in-process, on Thespian's simpleSystemBase, with stand-in session actors:
tests of the registry's protocols choose what each actor answers and when, which real actors
cannot be made to do on demand."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from thespian.actors import ActorSystem

from brain.actors.registry.actor import Registry
from brain.protocol.messages import WarmUp


class FixedPoolRegistry(Registry):
    """The real Registry whose pool holds `stand_in` actors and is never refilled, so which
    idle actor is handed out next is known (the one returned last)."""

    stand_in: Any = None  # an actor class that answers WarmUp with Warmed

    def _fork(self) -> Any:
        address = self.createActor(self.stand_in)
        self.send(address, WarmUp(()))
        return address

    def _arm_refill(self, secs: float = 0.0) -> None:
        pass


@contextmanager
def in_process_actors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                      **env: str) -> Iterator[ActorSystem]:
    """An in-process actor system whose actors read these settings (BRAIN_* variables)."""
    monkeypatch.setenv("BRAIN_DATA_DIR", str(tmp_path))
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("BRAIN_TRACE", raising=False)
    actors = ActorSystem("simpleSystemBase", transientUnique=True)
    try:
        yield actors
    finally:
        actors.shutdown()
