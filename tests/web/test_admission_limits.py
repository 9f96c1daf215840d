"""A submit admitted by the web worker (brain/web/admission.py) steps the session core with the
limits the server is configured with, the same ones its session actor applies
(brain/session_limits.py)."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest

from brain.journal import JournalWriter
from brain.sessions import core, records
from brain.sessions.state import Limits
from brain.settings import Settings
from brain.web.admission import Admission

CONFIG = {"agentloop": {"name": "default"}, "model": {"name": "scripted"}, "tools": [],
          "environments": [], "idle_ttl_ms": None, "metadata": {}}

CONFIGURED = {"BRAIN_MAX_MODEL_CALLS": "7", "BRAIN_MAX_TURN_SECS": "42",
              "BRAIN_MAX_TOOL_SECS": "9", "BRAIN_MAX_EMITTED_BYTES": "4096",
              "BRAIN_SESSION_IDLE_TTL_MS": "2500",
              "BRAIN_WEBHOOK_URL": "http://127.0.0.1:9/hook",
              "BRAIN_WEBHOOK_SECRET": "whsec_" + base64.b64encode(b"k" * 32).decode()}


def settings_in(data_dir: Path, **environ: str) -> Settings:
    return Settings.from_env({"BRAIN_DATA_DIR": str(data_dir), **environ})


def created(settings: Settings, session_id: str) -> Path:
    session_dir = settings.sessions_path / session_id
    writer = JournalWriter.open(session_dir / "journal")
    try:
        writer.append([records.session_created(CONFIG, 0)])
    finally:
        writer.close()
    return session_dir


def admitted_with(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> Limits:
    """The limits of the session state the admission of one submit stepped the core with."""
    seen: list[Limits] = []
    admit = core.admit

    def spy(state: Any, command: Any, now_ms: int) -> Any:
        seen.append(state.limits)
        return admit(state, command, now_ms)

    monkeypatch.setattr(core, "admit", spy)
    session_dir = created(settings, "s-1")
    receipt, sequence = Admission(settings, gateway=None)._commit(session_dir, "boot-1", "hi")
    assert receipt == {"session_id": "s-1", "sequence": 2} and sequence == 2
    [limits] = seen
    return limits


def test_admission_applies_the_configured_limits(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    limits = admitted_with(settings_in(tmp_path, **CONFIGURED), monkeypatch)
    assert limits == Limits(max_model_calls=7, max_turn_secs=42, max_tool_secs=9,
                            max_emitted_bytes=4096, idle_ttl_ms=2500, webhooks=True)


def test_admission_applies_the_default_settings_not_unbounded_limits(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    settings = settings_in(tmp_path)
    limits = admitted_with(settings, monkeypatch)
    assert limits.max_turn_secs == settings.max_turn_secs > 0
    assert limits.max_model_calls == settings.max_model_calls > 0
    assert limits.webhooks is False
