"""With BRAIN_CONFIG unset, `conf/brain.toml` of the directory `brain serve` starts in is read
(contract section 1: "conf/brain.toml, path from BRAIN_CONFIG")."""

from __future__ import annotations

from pathlib import Path

from tests.support.server import BrainServer

EXTRA_MODEL = """
[models.house]
provider = "scripted"
script = [ { text = "from the house model" } ]
"""


def test_conf_brain_toml_is_the_default_configuration(tmp_path: Path) -> None:
    workdir = tmp_path / "deployment"
    (workdir / "conf").mkdir(parents=True)
    (workdir / "conf" / "brain.toml").write_text(EXTRA_MODEL)
    server = BrainServer(tmp_path / "data", cwd=workdir).start()
    try:
        sid = server.create_session(model="house")["id"]
        result = server.send(sid, "hello")
        assert result["status"] == "ended", result
        assert result["output"] == "from the house model"
    finally:
        server.kill()


def test_without_conf_brain_toml_only_the_shipped_parts_exist(tmp_path: Path) -> None:
    workdir = tmp_path / "bare"
    workdir.mkdir()
    server = BrainServer(tmp_path / "data", cwd=workdir).start()
    try:
        refused = server.request("POST", "/v1/sessions", json={"model": "house"})
        assert refused.status_code == 400
        assert refused.json()["error"]["code"] == "invalid_request"
    finally:
        server.kill()
