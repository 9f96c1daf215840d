"""`[mcp_servers]` tables and the create body's MCP fields: what is refused, and why."""

from __future__ import annotations

from pathlib import Path

import pytest

from brain.config import BrainConfig
from brain.errors import ConfigError, InvalidRequest
from brain.tools.mcp.create import tool_entries, wanted_servers
from brain.tools.mcp.credentials import Credentials, CredentialStore, parse_credentials

SERVERS = {"web": {"name": "web", "url": "http://127.0.0.1:9/mcp"},
           "box": {"name": "box", "command": "box-mcp"}}


def load(tmp_path: Path, toml: str) -> BrainConfig:
    path = tmp_path / "brain.toml"
    path.write_text(toml)
    return BrainConfig.load(path)


def test_a_valid_table_loads(tmp_path: Path) -> None:
    config = load(tmp_path, '[mcp_servers.web]\nurl = "https://mcp.example.com/mcp"\n'
                            'tools = ["search"]\ntimeout_s = 5\n'
                            '[mcp_servers.box]\ncommand = "box-mcp"\nargs = ["-v"]\n'
                            'stateless = true\nmax_processes = 2\n')
    assert set(config.mcp_servers) == {"web", "box"}


@pytest.mark.parametrize(("table", "reason"), [
    ('[mcp_servers.web]\ntools = ["a"]\n', "exactly one of url"),
    ('[mcp_servers.web]\nurl = "http://h/mcp"\ncommand = "x"\n', "exactly one of url"),
    ('[mcp_servers.web]\nurl = "ftp://h/mcp"\n', "http:// or https://"),
    ('[mcp_servers.web]\nurl = "http://u:p@h/mcp"\n', "must not carry credentials"),
    ('[mcp_servers.web]\nurl = "http://h/mcp"\nargs = ["x"]\n', "args applies to a stdio"),
    ('[mcp_servers.web]\nurl = "http://h/mcp"\nsecret = "x"\n', "unknown field 'secret'"),
    ('[mcp_servers.web]\nurl = "http://h/mcp"\ntimeout_s = 0\n', "timeout_s"),
    ('[mcp_servers.box]\ncommand = "x"\nmax_processes = 0\n', "max_processes"),
    ('[mcp_servers."a.b"]\nurl = "http://h/mcp"\n', "a server name is"),
    ('[mcp_servers.web]\nurl = "http://h/mcp"\n[tools."web.x"]\nroute = "host"\n',
     "taken by MCP server web"),
])
def test_a_table_that_cannot_work_is_refused_at_load(tmp_path: Path, table: str,
                                                     reason: str) -> None:
    with pytest.raises(ConfigError) as refused:
        load(tmp_path, table)
    assert reason in str(refused.value)


def test_credentials_are_checked_against_each_servers_transport() -> None:
    parsed = parse_credentials({"web": {"bearer_token": "t", "headers": {"X-A": "b"}},
                                "box": {"env": {"TOKEN": "s"}}}, SERVERS)
    assert parsed["web"].http_headers() == {"X-A": "b", "Authorization": "Bearer t"}
    assert dict(parsed["box"].env) == {"TOKEN": "s"}
    for given, where in [({"box": {"bearer_token": "t"}}, "mcp_credentials.box"),
                         ({"web": {"env": {"A": "b"}}}, "mcp_credentials.web"),
                         ({"nope": {"bearer_token": "t"}}, "mcp_credentials.nope"),
                         ({"web": {"bearer_token": ""}}, "bearer_token"),
                         ({"web": "t"}, "mcp_credentials.web")]:
        with pytest.raises(InvalidRequest) as refused:
            parse_credentials(given, SERVERS)
        assert where in refused.value.message and "t\"" not in refused.value.message


def test_credentials_never_show_in_their_repr_and_are_forgotten() -> None:
    held = Credentials(bearer_token="hunter2", env=(("K", "hunter3"),))
    assert "hunter" not in repr(held) and "hunter" not in str(held)
    store = CredentialStore()
    store.hold("s1", {"web": held})
    assert store.get("s1", "web") is held and store.get("s1", "box") is None
    store.forget("s1")
    assert store.get("s1", "web") is None


def test_create_names_and_clashes() -> None:
    servers, credentials = wanted_servers({"mcp_servers": ["web"]}, SERVERS)
    assert list(servers) == ["web"] and credentials == {}
    with pytest.raises(InvalidRequest, match="must not repeat"):
        wanted_servers({"mcp_servers": ["web", "web"]}, SERVERS)
    listing = {"web": [{"name": "search", "inputSchema": {"type": "object"}},
                       {"name": "bad name"}]}
    [entry] = tool_entries(servers, {}, listing, set())
    assert entry["name"] == "web.search" and entry["credentials"] is False
    with pytest.raises(InvalidRequest, match="clashes"):
        tool_entries(servers, {}, listing, {"web.search"})
