"""The operator bearer token: BRAIN_API_TOKEN, or one generated into the data dir (mode 0600)."""

from __future__ import annotations

import secrets
from pathlib import Path

from brain.durable_dirs import create_durably, make_dirs_durable
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
    make_dirs_durable(settings.data_path)
    token = "brain_" + secrets.token_urlsafe(32)
    if not create_durably(path, (token + "\n").encode("utf-8")):
        return _read(path)  # another process generated it first
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
