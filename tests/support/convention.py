"""Members of a convention of several hosts, each a real `brain serve` on its own loopback
address (127.0.0.2, 127.0.0.3, ... stand for hosts on a private network)."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from tests.support.server import BrainServer


class MemberServer(BrainServer):
    """A `brain serve` member of a convention, on its own loopback address."""

    def __init__(self, tmp_path: Path, name: str, host: str,
                 leader: MemberServer | None = None) -> None:
        (tmp_path / name).mkdir()
        super().__init__(tmp_path / name / "data", env={
            "BRAIN_WEB_WORKERS": "2",
            "BRAIN_ACTOR_SECRET_FILE": str(shared_actor_secret(tmp_path))})
        self.name, self.host, self.leader = name, host, leader

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def env(self) -> dict[str, str]:
        env = super().env()
        leader = self.leader or self
        env.update({"BRAIN_LISTEN": f"{self.host}:{self.port}", "BRAIN_ACTOR_BIND": self.host,
                    "BRAIN_MEMBER": self.name,
                    "BRAIN_CONVENTION": f"{leader.host}:{leader.actor_port}"})
        return env

    def sessions_on_disk(self) -> set[str]:
        root = self.data_dir / "sessions"
        return {p.name for p in root.iterdir()} if root.is_dir() else set()


def shared_actor_secret(tmp_path: Path) -> Path:
    """The one actor secret every member under `tmp_path` signs its frames with, as an operator
    copies one file to every host (docs/several-hosts.md); made at the first member."""
    path = tmp_path / "convention.secret"
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return path
    with os.fdopen(fd, "wb") as out:
        out.write(secrets.token_bytes(32))
    return path


def knows(server: MemberServer, other: str) -> bool:
    """Whether `server` forwards to `other`: its (made-up) session is `not_found` there."""
    resp = server.request("GET", f"/v1/sessions/0000-{other}")
    return resp.status_code == 404 and resp.json()["error"]["code"] == "not_found"
