"""Conversations are private: a real `brain serve` started under umask 022 makes its data dir
0700 and every file in it 0600 (docs/operations.md, "The data dir")."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from brain.operator_token import TOKEN_FILE
from brain.web.idempotency import FILENAME as IDEMPOTENCY_FILE
from tests.support.server import BrainServer

EXPECTED = [TOKEN_FILE, IDEMPOTENCY_FILE, "run/owner.lock", "run/actor.json"]


def modes_not_private(data: Path) -> list[str]:
    """Every directory under `data` (itself included) not 0700, every file not 0600, and any
    socket that others may use, as `path mode` lines."""
    wrong = []
    for path in [data, *data.rglob("*")]:
        try:
            info = path.lstat()
        except FileNotFoundError:
            continue  # removed while walking (a live socket, a follow marker)
        mode = stat.S_IMODE(info.st_mode)
        if stat.S_ISDIR(info.st_mode):
            ok = mode == 0o700
        elif stat.S_ISREG(info.st_mode):
            ok = mode == 0o600
        else:
            ok = mode & 0o077 == 0
        if not ok:
            wrong.append(f"{path.relative_to(data.parent)} {mode:04o}")
    return wrong


def test_a_real_server_keeps_every_dir_0700_and_every_file_0600_under_umask_022(
        tmp_path: Path) -> None:
    data = tmp_path / "data"  # made by Brain
    old = os.umask(0o022)
    try:
        server = BrainServer(data, env={"BRAIN_API_TOKEN": ""}).start()
    finally:
        os.umask(old)
    try:
        server.token = (data / TOKEN_FILE).read_text().strip()
        sid = server.create_session()["id"]
        resp = server.request("POST", f"/v1/sessions/{sid}/messages", json={"input": "hello"},
                              headers={"Idempotency-Key": "private-1"})
        assert resp.status_code == 200, resp.text
        assert server.request("GET", f"/v1/sessions/{sid}/events").status_code == 200
        for name in EXPECTED:
            assert (data / name).is_file(), name
        assert list((data / "sessions" / sid / "journal").glob("*.seg"))
        assert list(data.glob(f"{IDEMPOTENCY_FILE}-wal"))
        assert modes_not_private(data) == []  # while it runs: locks, sockets, SQLite's -wal
    finally:
        server.stop()
    assert modes_not_private(data) == []
