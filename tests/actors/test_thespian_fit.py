"""Brain refuses, in one line, to patch a Thespian its patches were not written for."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from thespian.system.transport import TCPTransport as tcp

from brain.actors.thespian import reuse as thespian_reuse
from brain.actors.thespian.fit import PATCHES, THESPIAN_VERSION, ThespianMismatch, check_thespian
from brain.actors.thespian.identify import describe_messages_lazily
from brain.ports import free_port

REPO = Path(__file__).resolve().parents[2]


def refusal(**kwargs: object) -> str:
    with pytest.raises(ThespianMismatch) as raised:
        check_thespian(**kwargs)  # type: ignore[arg-type]
    message = str(raised.value)
    assert "\n" not in message
    return message


def test_the_installed_thespian_fits_every_patch_applied_or_not() -> None:
    check_thespian()
    thespian_reuse.patch_idle_socket_reuse()  # a patched attribute keeps the original's signature
    describe_messages_lazily()
    check_thespian()


def test_another_version_is_refused_naming_the_patches() -> None:
    message = refusal(installed="4.0.2")
    assert message.startswith("Thespian 4.0.2 is installed, but Brain's Thespian patches (")
    for patch in PATCHES:
        assert patch in message
    assert f"install thespian=={THESPIAN_VERSION}" in message


def test_a_missing_attribute_is_refused_naming_the_patch_and_the_attribute(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(tcp.TCPTransport, "_next_XMIT_6")
    assert refusal(patches=["thespian_reuse"]) == (
        "Thespian patch thespian_reuse: thespian.system.transport.TCPTransport.TCPTransport."
        "_next_XMIT_6 is missing; the patch is written for Thespian 4.0.1 and is not applied "
        "(docs/thespian-patches.md)")


def test_a_changed_signature_is_refused_naming_the_parameters(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tcp.TCPIncoming_Common, "remainingSize", lambda self, limit: 20)
    message = refusal(patches=["thespian_receive"])
    assert message.startswith("Thespian patch thespian_receive: thespian.system.transport."
                              "TCPTransport.TCPIncoming_Common.remainingSize takes (self, limit) "
                              "where the patch expects (self); ")


def test_a_module_that_does_not_import_is_refused() -> None:
    from brain.actors.thespian.fit import Relied

    table = {"thespian_select": (Relied("thespian.system.transport.NoSuchModule", "selectors"),)}
    assert "thespian.system.transport.NoSuchModule.selectors cannot be imported" in refusal(
        patches=["thespian_select"], table=table)


def test_a_patch_that_does_not_fit_patches_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    changed = lambda self, intent, extra: True  # noqa: E731
    monkeypatch.setattr(tcp.TCPTransport, "_next_XMIT_1", changed)
    monkeypatch.setattr(thespian_reuse.patch_idle_socket_reuse, "applied", False)
    with pytest.raises(ThespianMismatch, match="thespian_reuse"):
        thespian_reuse.patch_idle_socket_reuse()
    assert tcp.TCPTransport._next_XMIT_1 is changed


@pytest.fixture
def thespian_4_0_2(tmp_path: Path) -> dict[str, str]:
    """An environment whose importlib.metadata finds Thespian 4.0.2 first (the code imported
    is still the installed 4.0.1: only the version differs)."""
    info = tmp_path / "site" / "thespian-4.0.2.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: thespian\nVersion: 4.0.2\n")
    return {**os.environ, "PYTHONPATH": f"{tmp_path / 'site'}{os.pathsep}{REPO}",
            "BRAIN_DATA_DIR": str(tmp_path / "data"),
            "BRAIN_LISTEN": f"127.0.0.1:{free_port('127.0.0.1')}", "BRAIN_CONFIG": ""}


@pytest.mark.parametrize("command, code", [(["-m", "brain.cli", "serve"], 2),
                                           (["-m", "brain.cli", "web"], 2),
                                           (["-m", "brain.cli", "actors"], 2),
                                           (["-m", "brain.actors.boot"], 3)])
def test_brain_refuses_to_start_with_one_line(thespian_4_0_2: dict[str, str], command: list[str],
                                              code: int) -> None:
    run = subprocess.run([sys.executable, *command], env=thespian_4_0_2, cwd=REPO,
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == code, run.stderr
    [line] = run.stderr.splitlines()
    assert "Thespian 4.0.2 is installed" in line and "thespian==4.0.1" in line
    assert run.stdout == ""
