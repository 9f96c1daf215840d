"""Where `brain chat` finds the server and the token, in the order an operator expects."""

from __future__ import annotations

import os
from pathlib import Path

DEFAULT_LISTEN = "127.0.0.1:3210"


class ChatSetupError(Exception):
    """No usable token or url: said to the user in one line, exit status 2."""


def resolve_url(url: str | None) -> str:
    """--url, else BRAIN_LISTEN (host:port of a local `brain serve`), else the default listen."""
    if url:
        return url.rstrip("/")
    listen = os.environ.get("BRAIN_LISTEN") or DEFAULT_LISTEN
    return listen.rstrip("/") if "://" in listen else f"http://{listen}"


def resolve_token(token: str | None, token_file: str | None) -> str:
    """--token, --token-file, BRAIN_API_TOKEN, else the data directory's operator.token."""
    if token:
        return token
    if token_file:
        return _read_token(Path(token_file))
    from_env = os.environ.get("BRAIN_API_TOKEN")
    if from_env:
        return from_env
    data_dir = Path(os.environ.get("BRAIN_DATA_DIR") or "./brain-data")
    path = data_dir / "operator.token"
    if not path.exists():
        raise ChatSetupError("no token: give --token or --token-file, set BRAIN_API_TOKEN, "
                             f"or run where {path} exists")
    return _read_token(path)


def _read_token(path: Path) -> str:
    try:
        text = path.read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise ChatSetupError(f"cannot read the token file {path}: {exc.strerror}") from None
    if not text:
        raise ChatSetupError(f"the token file {path} is empty")
    return text
