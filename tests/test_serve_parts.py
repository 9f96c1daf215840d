"""The small parts `brain serve` is built from: port checks, process names, the run record."""

from __future__ import annotations

import json
import socket
from pathlib import Path

from brain.actors.identity import (
    read_run_record,
    remove_run_record,
    run_record_path,
    settings_identity,
    write_run_record,
)
from brain.actors.thespian.proctitle import role_of
from brain.ports import free_port, local_host, port_is_free
from brain.settings import Settings


def test_a_listening_port_is_taken_and_a_closed_one_is_free() -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        assert not port_is_free("127.0.0.1", port)
        assert not port_is_free("0.0.0.0", port)
    assert port_is_free("127.0.0.1", port)
    assert port_is_free("127.0.0.1", free_port("127.0.0.1"))


def test_wildcard_binds_are_reached_through_loopback() -> None:
    assert local_host("0.0.0.0") == "127.0.0.1"
    assert local_host("[::]") == "::1"
    assert local_host("10.0.0.7") == "10.0.0.7"


def test_actor_roles_read_like_the_classes_they_run() -> None:
    assert [role_of(name) for name in ("MultiProcAdmin", "logger", "Registry", "SessionActor",
                                       "ModelExecutor", "EnvironmentExecutor", "HostDispatcher",
                                       "MetricsActor")] == [
        "actor system", "actor logger", "registry", "session", "model executor",
        "environment executor", "host dispatcher", "metrics"]


def test_run_record_round_trip_and_only_its_writer_removes_it(tmp_path: Path) -> None:
    settings = Settings.from_env({"BRAIN_DATA_DIR": str(tmp_path), "BRAIN_BOOT_ID": "b1"})
    assert read_run_record(settings.data_path) is None
    write_run_record(settings, 45678)
    record = read_run_record(settings.data_path)
    assert record is not None
    assert (record.actor_port, record.identity) == (45678, settings_identity(settings))
    path = run_record_path(settings.data_path)
    body = json.loads(path.read_text())
    path.write_text(json.dumps({**body, "boot_pid": body["boot_pid"] + 1}))  # another start's
    remove_run_record(settings.data_path)
    assert path.exists()
    path.write_text(json.dumps(body))
    remove_run_record(settings.data_path)
    assert not path.exists()
