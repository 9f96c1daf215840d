"""The parts of several hosts that need no server: ids, placement checks, settings, contract."""

from __future__ import annotations

from pathlib import Path

import falcon
import falcon.testing
import pytest

from brain import errors
from brain.actors.convention import (
    MEMBER_CAPABILITY,
    accepts_member,
    convention_capabilities,
    member_of,
    member_session_id,
    registry_global_name,
)
from brain.actors.registry.actor import Registry
from brain.actors.roster import Roster
from brain.config import BrainConfig
from brain.settings import SettingError, Settings
from brain.web.app import create_app
from brain.web.forwarding import session_in_path
from brain.web.live_hub import LiveHub
from tests.web.test_openapi import NoActors


def test_a_members_session_ids_end_in_its_name_and_single_host_ids_do_not() -> None:
    assert member_session_id("0190abc", "b") == "0190abc-b"
    assert member_of("0190abc-b") == "b"
    assert member_session_id("0190abc", None) == "0190abc"
    assert member_of("0190abc") is None
    assert member_of("0190abc-Not_A_Member") is None


def test_registry_and_roster_are_created_only_on_the_member_they_name() -> None:
    here = {MEMBER_CAPABILITY: "a"}
    for actor in (Registry, Roster):
        assert actor.actorSystemCapabilityCheck(here, {MEMBER_CAPABILITY: "a"})
        assert not actor.actorSystemCapabilityCheck(here, {MEMBER_CAPABILITY: "b"})
        assert actor.actorSystemCapabilityCheck(here, {})
    assert accepts_member({}, None)
    assert registry_global_name(None) == "brain.registry"
    assert registry_global_name("b") == "brain.registry.b"


def test_only_session_routes_are_forwarded() -> None:
    assert session_in_path("/v1/sessions/abc-b/events") == "abc-b"
    assert session_in_path("/v1/sessions/abc-b") == "abc-b"
    assert session_in_path("/v1/sessions") is None
    assert session_in_path("/v1/host/poll") is None


def test_member_settings_come_together_and_advertise_the_front_end() -> None:
    single = Settings.from_env({})
    assert single.member is None and convention_capabilities(single) == {}
    member = Settings.from_env({"BRAIN_MEMBER": "b", "BRAIN_CONVENTION": "10.0.0.1:7001",
                                "BRAIN_LISTEN": "10.0.0.2:3210"})
    assert convention_capabilities(member) == {
        "Brain Member": "b", "Brain Front End": "http://10.0.0.2:3210",
        "Convention Address.IPv4": "10.0.0.1:7001"}
    with pytest.raises(SettingError):
        Settings.from_env({"BRAIN_MEMBER": "b"})
    with pytest.raises(SettingError):
        Settings.from_env({"BRAIN_MEMBER": "B-1", "BRAIN_CONVENTION": "h:1"})


def test_unavailable_is_a_503_with_retry_after_on_every_session_route(tmp_path: Path) -> None:
    assert errors.from_code("unavailable", "down").status == 503
    settings = Settings.from_env({"BRAIN_DATA_DIR": str(tmp_path)})
    app: falcon.App = create_app(settings, BrainConfig.load(), NoActors(), "op-token",
                                 hub=LiveHub(settings.data_path))
    document = falcon.testing.TestClient(app).simulate_get(
        "/openapi.json", headers={"Authorization": "Bearer op-token"}).json
    e503 = document["components"]["responses"]["E503"]
    assert "unavailable" in e503["description"] and "Retry-After" in e503["headers"]
    for path, operations in document["paths"].items():
        if path.startswith("/v1/sessions/"):
            assert all("503" in op["responses"] for method, op in operations.items()
                       if method != "parameters"), path
