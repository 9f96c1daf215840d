"""Session-scoped bearer tokens, stored hashed under `sessions/{id}/credentials/`.

A token names its session (`bst_<session id>_<secret>`), so checking it is one file lookup:
the file name is the token's sha256. Only the hash is ever written; deleting the session
directory forgets the credentials with it.
"""

from __future__ import annotations

import hashlib
import os
import secrets
from pathlib import Path

from brain.durable_dirs import make_dirs_durable
from brain.fds import close_fd

PREFIX = "bst_"


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def issue_session_token(session_dir: Path) -> str:
    session_id = session_dir.name
    token = f"{PREFIX}{session_id}_{secrets.token_hex(32)}"  # hex: no "_" inside
    credentials = session_dir / "credentials"
    make_dirs_durable(credentials, parents=False)  # a deleted session is not made again
    path = credentials / _digest(token)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.fsync(fd)
    finally:
        close_fd(fd)
    dir_fd = os.open(credentials, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        close_fd(dir_fd)
    return token


def session_of_token(sessions_root: Path, token: str) -> str | None:
    """The session a valid session token belongs to, else None."""
    if not token.startswith(PREFIX):
        return None
    session_id, sep, secret = token[len(PREFIX):].rpartition("_")
    if not sep or not session_id or not secret or "/" in session_id or session_id in (".", ".."):
        return None
    if (sessions_root / session_id / "credentials" / _digest(token)).is_file():
        return session_id
    return None
