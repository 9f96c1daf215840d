"""The operator bearer token: BRAIN_API_TOKEN, or one generated into the data dir (mode 0600)."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from brain.settings import Settings

TOKEN_FILE = "operator.token"


def ensure_operator_token(settings: Settings) -> str:
    """Return the operator token, generating `$BRAIN_DATA_DIR/operator.token` on first start."""
    if settings.api_token:
        return settings.api_token
    path = settings.data_path / TOKEN_FILE
    try:
        return _read(path)
    except FileNotFoundError:
        pass
    settings.data_path.mkdir(parents=True, exist_ok=True)
    token = "brain_" + secrets.token_urlsafe(32)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return _read(path)  # another process generated it first
    with os.fdopen(fd, "w") as out:
        out.write(token + "\n")
        out.flush()
        os.fsync(out.fileno())
    return token


def read_operator_token(settings: Settings) -> str:
    if settings.api_token:
        return settings.api_token
    return _read(settings.data_path / TOKEN_FILE)


def _read(path: Path) -> str:
    token = path.read_text("utf-8").strip()
    if not token:
        raise RuntimeError(f"{path} is empty")
    return token
