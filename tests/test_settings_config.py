"""Settings are declared once; configuration resolves create bodies of names only."""

from __future__ import annotations

from pathlib import Path

import pytest

from brain import errors
from brain.config import BrainConfig, ConfigError
from brain.settings import SETTINGS, SettingError, Settings, markdown_table


def test_defaults_match_the_contract() -> None:
    s = Settings.from_env({})
    assert (s.data_dir, s.listen, s.max_model_calls, s.max_turn_secs, s.max_tool_secs,
            s.max_emitted_bytes, s.session_idle_ttl_ms, s.drain_secs) == (
        "./brain-data", "127.0.0.1:3210", 128, 1800, 300, 1048576, None, 60)


def test_zero_means_no_bound_and_bad_values_are_refused() -> None:
    assert Settings.from_env({"BRAIN_SESSION_IDLE_TTL_MS": "0"}).session_idle_ttl_ms == 0
    with pytest.raises(SettingError, match="BRAIN_MAX_TURN_SECS"):
        Settings.from_env({"BRAIN_MAX_TURN_SECS": "-1"})
    with pytest.raises(SettingError, match="BRAIN_LISTEN"):
        Settings.from_env({"BRAIN_LISTEN": "nonsense"})
    with pytest.raises(SettingError, match="BRAIN_LISTEN.*other than 0"):
        Settings.from_env({"BRAIN_LISTEN": "127.0.0.1:0"})


def test_docs_table_lists_every_setting() -> None:
    table = markdown_table()
    for setting in SETTINGS:
        assert f"| {setting.env} |" in table


def test_shipped_defaults_resolve_an_empty_create_body() -> None:
    resolved = BrainConfig.load(None).resolve_create({})
    assert resolved["model"]["name"] == "scripted"
    assert resolved["agentloop"]["name"] == "default"
    assert resolved["tools"] == [] and resolved["environments"] == []


def test_config_file_adds_parts_and_keeps_defaults(tmp_path: Path) -> None:
    path = tmp_path / "brain.toml"
    path.write_text('[models.fast]\nprovider = "openai"\nbase_url = "http://127.0.0.1:1/v1"\n'
                    'model = "m"\napi_key_env = "FAST_KEY"\n')
    config = BrainConfig.load(path)
    assert set(config.models) == {"scripted", "fast"}
    resolved = config.resolve_create({"model": "fast", "tools": ["echo"]})
    assert resolved["model"]["api_key_env"] == "FAST_KEY"
    assert resolved["tools"][0]["route"] == "builtin"


@pytest.mark.parametrize("body, field", [
    ({"model": "missing"}, "model"),
    ({"tools": ["echo", "echo"]}, "tools"),
    ({"tools": "echo"}, "tools"),
    ({"surprise": 1}, "surprise"),
    ({"idle_ttl_ms": -5}, "idle_ttl_ms"),
    ({"idle_ttl_ms": True}, "idle_ttl_ms"),
])
def test_bad_create_bodies_name_the_field(body: dict, field: str) -> None:
    with pytest.raises(errors.InvalidRequest, match=field):
        BrainConfig.load(None).resolve_create(body)


def test_broken_config_file_is_refused_at_start(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text('[models.x]\nprovider = "telepathy"\n')
    with pytest.raises(ConfigError, match="provider"):
        BrainConfig.load(path)


def test_configuration_doc_is_current() -> None:
    doc = (Path(__file__).resolve().parent.parent / "docs" / "configuration.md").read_text()
    assert markdown_table() in doc, "regenerate with `brain settings --markdown`"


def test_session_actor_niceness_is_bounded() -> None:
    assert Settings.from_env({"BRAIN_SESSION_ACTOR_NICE": "0"}).session_actor_nice == 0
    assert Settings.from_env({}).session_actor_nice == 5
    for bad in ("20", "-1", "five"):
        with pytest.raises(SettingError, match="BRAIN_SESSION_ACTOR_NICE"):
            Settings.from_env({"BRAIN_SESSION_ACTOR_NICE": bad})
