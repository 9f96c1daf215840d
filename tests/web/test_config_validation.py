"""Configuration refused at load for Tool targets that cannot work; create bodies with nulls
and seed transcripts that are not messages (the style of tests/test_settings_config.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from brain import errors
from brain.config import BrainConfig, ConfigError, seed_transcript


def load(tmp_path: Path, toml: str) -> BrainConfig:
    path = tmp_path / "brain.toml"
    path.write_text(toml)
    return BrainConfig.load(path)


# -- Tool targets at load ----------------------------------------------------------------------


@pytest.mark.parametrize("toml, message", [
    ('[tools.t]\nroute = "http"\n', "tools.t: http tool has no url"),
    ('[tools.t]\nroute = "http"\nurl = "ftp://example.com/x"\n', "tools.t: http tool url must"),
    ('[tools.t]\nroute = "http"\nurl = "http://127.0.0.1:99999/x"\n', "tools.t: .*bad port"),
    ('[tools.t]\nroute = "builtin"\nfunction = "does_not_exist"\n',
     "tools.t: no builtin function 'does_not_exist'"),
    ('[tools.t]\nroute = "builtin"\n', "tools.t: no builtin function None"),
    ('[tools.t]\nroute = "environment"\nenvironment = "nowhere"\nop = "exec"\n',
     "tools.t: environment 'nowhere' is not configured"),
    ('[tools.t]\nroute = "environment"\nop = "exec"\n',
     "tools.t: environment None is not configured"),
    ('[tools.t]\nroute = "environment"\nenvironment = "local"\nop = "teardown"\n',
     "tools.t: op must be one of exec, read, write"),
])
def test_tool_targets_that_cannot_work_are_refused_at_load(
    tmp_path: Path, toml: str, message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        load(tmp_path, toml)


def test_tool_targets_that_can_work_load(tmp_path: Path) -> None:
    config = load(tmp_path, """
[environments.work]
kind = "local"

[tools.lookup]
route = "http"
url = "https://tools.example:8443/lookup?v=1"

[tools.nap]
route = "builtin"
function = "sleep"

[tools.run]
route = "environment"
environment = "work"
op = "exec"

[tools.shipped_env]
route = "environment"
environment = "local"
op = "read"

[tools.client_side]
route = "host"
""")
    assert {"lookup", "nap", "run", "shipped_env", "client_side", "echo"} <= set(config.tools)


def test_an_environment_tool_may_name_an_environment_of_the_same_file(tmp_path: Path) -> None:
    """Sections are merged before validation, so their order in the file does not matter."""
    config = load(tmp_path, '[tools.t]\nroute = "environment"\nenvironment = "later"\n'
                            'op = "write"\n[environments.later]\nkind = "host"\n')
    assert config.tools["t"]["environment"] == "later"


# -- create bodies: null means absent --------------------------------------------------------


NULLABLE_FIELDS = ("agentloop", "model", "tools", "environments", "transcript", "idle_ttl_ms",
                   "metadata")


@pytest.mark.parametrize("field", NULLABLE_FIELDS)
def test_a_null_optional_field_is_the_same_as_absent(field: str) -> None:
    config = BrainConfig.load(None)
    assert config.resolve_create({field: None}) == config.resolve_create({})


def test_all_fields_null_resolve_like_an_empty_body() -> None:
    config = BrainConfig.load(None)
    body = dict.fromkeys(NULLABLE_FIELDS)
    assert config.resolve_create(body) == config.resolve_create({})
    assert seed_transcript(body) == []


def test_an_unknown_field_is_refused_even_when_null() -> None:
    with pytest.raises(errors.InvalidRequest, match="unknown field: surprise"):
        BrainConfig.load(None).resolve_create({"surprise": None})


# -- seed transcripts --------------------------------------------------------------------------


def test_seed_transcript_accepts_messages_of_the_contract() -> None:
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": [{"type": "text", "text": "hi"}]},
        {"role": "assistant", "content": [
            {"type": "tool_call", "id": "c1", "name": "echo", "input": {}}]},
        {"role": "tool", "content": [
            {"type": "tool_result", "tool_call_id": "c1", "content": {}, "is_error": False}]},
        {"role": "assistant", "content": []},
    ]
    assert seed_transcript({"transcript": messages}) == messages
    BrainConfig.load(None).resolve_create({"transcript": messages})


@pytest.mark.parametrize("item, problem", [
    ("hello", r"transcript\[1\]: expected a message object"),
    ({"content": "hi"}, r"transcript\[1\]: role must be one of user, assistant, tool, system"),
    ({"role": "", "content": "hi"}, r"transcript\[1\]: role must be one of"),
    ({"role": "narrator", "content": "hi"}, r"transcript\[1\]: role must be one of"),
    ({"role": "user"}, r"transcript\[1\]: content must be a string or a list of content blocks"),
    ({"role": "user", "content": None}, r"transcript\[1\]: content must be"),
    ({"role": "user", "content": 7}, r"transcript\[1\]: content must be"),
    ({"role": "user", "content": ["text"]}, r"transcript\[1\]: content must be"),
    ({"role": "user", "content": [{"text": "no type"}]}, r"transcript\[1\]: content must be"),
])
def test_seed_transcript_names_the_item_that_is_not_a_message(item: object, problem: str) -> None:
    body = {"transcript": [{"role": "user", "content": "fine"}, item]}
    with pytest.raises(errors.InvalidRequest, match=problem) as caught:
        seed_transcript(body)
    assert caught.value.status == 400 and caught.value.code == "invalid_request"
    with pytest.raises(errors.InvalidRequest, match=problem):
        BrainConfig.load(None).resolve_create(body)


@pytest.mark.parametrize("target", ['function = ["echo"]', 'function = { name = "echo" }'])
def test_a_builtin_named_by_a_non_string_is_refused_not_crashed(
    tmp_path: Path, target: str
) -> None:
    with pytest.raises(ConfigError, match="tools.t: no builtin function"):
        load(tmp_path, f'[tools.t]\nroute = "builtin"\n{target}\n')


def test_an_environment_named_by_a_non_string_is_refused_not_crashed(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="tools.t: environment .* is not configured"):
        load(tmp_path, '[tools.t]\nroute = "environment"\nenvironment = ["local"]\nop = "exec"\n')


def test_an_http_url_the_route_could_not_parse_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="tools.t: "):
        load(tmp_path, '[tools.t]\nroute = "http"\nurl = "http://[::1/x"\n')
