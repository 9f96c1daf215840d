"""Brain refuses, in one line, to patch a Thespian its patches were not written for."""

from __future__ import annotations

import ast
import os
import re
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
                                           (["-m", "brain.actors.system.boot"], 3)])
def test_brain_refuses_to_start_with_one_line(thespian_4_0_2: dict[str, str], command: list[str],
                                              code: int) -> None:
    run = subprocess.run([sys.executable, *command], env=thespian_4_0_2, cwd=REPO,
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == code, run.stderr
    [line] = run.stderr.splitlines()
    assert "Thespian 4.0.2 is installed" in line and "thespian==4.0.1" in line
    assert run.stdout == ""


def test_a_line_the_patch_counts_on_that_is_gone_is_refused() -> None:
    from brain.actors.thespian.fit import Relied

    table = {"thespian_no_daemon": (
        Relied("thespian.system.multiprocCommon", "startAdmin", None,
               contains=("os.setsid()", "os.setpgrp()")),)}
    assert refusal(patches=["thespian_no_daemon"], table=table) == (
        "Thespian patch thespian_no_daemon: thespian.system.multiprocCommon.startAdmin no "
        "longer contains `os.setpgrp()`; the patch is written for Thespian 4.0.1 and is not "
        "applied (docs/thespian-patches.md)")


# --- every touch of Thespian's internals is in brain/actors/thespian/ and in the table ---------

THESPIAN_DIR = REPO / "brain" / "actors" / "thespian"
TOUCHING_NOTHING = {"__init__", "exit_status", "fit", "inherited_sockets", "speedups"}
"""Modules of brain/actors/thespian/ with no entry: they import no Thespian module."""


def test_every_module_that_touches_thespian_has_an_entry() -> None:
    from brain.actors.thespian.fit import PATCH_MODULES

    assert list(PATCH_MODULES) == list(PATCHES)
    modules = {path.stem for path in THESPIAN_DIR.glob("*.py")}
    assert set(PATCH_MODULES.values()) | TOUCHING_NOTHING == modules
    for name in TOUCHING_NOTHING:
        assert "thespian" not in imported_modules(THESPIAN_DIR / f"{name}.py"), name


def imported_modules(path: Path) -> set[str]:
    """The top-level names of the modules `path` imports."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module.split(".")[0])
    return found


PRIVATE = re.compile(r"_[A-Za-z]\w*")


def private_names(path: Path) -> set[str]:
    """The private attribute names `path` uses that it does not define itself: read as
    `x._name`, or named as a string (`getattr(x, "_name")`). A class of its own's attributes
    and Brain's own marks (`_brain...`) are left out."""
    tree = ast.parse(path.read_text())
    own: set[str] = set()
    for cls in (node for node in ast.walk(tree) if isinstance(node, ast.ClassDef)):
        for node in ast.walk(cls):
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                own.add(node.attr)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                own.add(node.value)  # __slots__
    used = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            used.add(node.attr)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            used.add(node.value)
    return {name for name in used - own if PRIVATE.fullmatch(name)
            and not name.endswith("__") and not name.startswith("_brain")}


def table_names(patch: str) -> set[str]:
    names = set()
    for relied in PATCHES[patch]:
        names |= set(relied.attribute.split("."))
        for fragment in relied.contains:
            names |= set(re.findall(r"\w+", fragment))
    return names


@pytest.mark.parametrize("patch", list(PATCHES))
def test_every_private_name_a_module_uses_is_in_its_entry(patch: str) -> None:
    from brain.actors.thespian.fit import PATCH_MODULES

    used = private_names(THESPIAN_DIR / f"{PATCH_MODULES[patch]}.py")
    assert used - table_names(patch) == set()


def test_the_private_name_scan_finds_what_it_should() -> None:
    assert {"_systemBase", "_run_transport", "_attempts"} <= private_names(
        THESPIAN_DIR / "endpoint.py")
    assert {"_rData", "_openSockets", "_pauseUntil"} <= private_names(THESPIAN_DIR / "reuse.py") \
        | private_names(THESPIAN_DIR / "receive.py")
    assert "_masks" not in private_names(THESPIAN_DIR / "poll.py")  # OneShotPoll's own


def outside_modules() -> list[Path]:
    """Brain's and its tools' modules outside brain/actors/thespian/."""
    return sorted(path for top in ("brain", "tools") for path in (REPO / top).rglob("*.py")
                  if THESPIAN_DIR not in path.parents)


def thespian_touches(source: str) -> list[str]:
    """Where `source` reads `_systemBase`, or assigns (or deletes, or setattr()s) an attribute
    of a Thespian module or of something imported from one, or `os.setsid`."""
    tree = ast.parse(source)
    from_thespian = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            from_thespian |= {(alias.asname or alias.name).split(".")[0] for alias in node.names
                              if alias.name.split(".")[0] == "thespian"}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "thespian":
            from_thespian |= {alias.asname or alias.name for alias in node.names}

    def root(node: ast.expr) -> str | None:
        while isinstance(node, ast.Attribute):
            node = node.value
        return node.id if isinstance(node, ast.Name) else None

    found = []
    for node in ast.walk(tree):
        targets: list[ast.expr] = []
        if isinstance(node, (ast.Assign, ast.Delete)):
            targets = list(node.targets)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id in ("setattr", "delattr") and node.args \
                and root(node.args[0]) in from_thespian:
            found.append(f"line {node.lineno}: {node.func.id}() on a Thespian object")
        for target in targets:
            if isinstance(target, ast.Attribute) and (
                    root(target) in from_thespian or ast.unparse(target) == "os.setsid"):
                found.append(f"line {node.lineno}: {ast.unparse(target)} assigned")
        if isinstance(node, ast.Attribute) and node.attr == "_systemBase":
            found.append(f"line {node.lineno}: _systemBase read")
        if isinstance(node, ast.Constant) and node.value == "_systemBase":
            found.append(f"line {node.lineno}: _systemBase named")
    return found


def test_no_module_outside_brain_actors_thespian_touches_thespians_internals() -> None:
    modules = outside_modules()
    assert len(modules) > 100 and REPO / "brain" / "web" / "gateway.py" in modules
    touches = {str(path.relative_to(REPO)): found for path in modules
               if (found := thespian_touches(path.read_text()))}
    assert touches == {}


def test_the_touch_scan_finds_each_kind_of_touch() -> None:
    source = (
        "import os\n"
        "import thespian.system.transport.TCPTransport as tcp\n"
        "from thespian.system import multiprocCommon\n"
        "from thespian.system.transport import TCPTransport\n"
        "tcp.LISTEN_DEPTH = 1\n"
        "multiprocCommon.setProcName = print\n"
        "TCPTransport.TCPTransport._next_XMIT_1 += 0\n"
        "setattr(TCPTransport, 'REUSE_SOCKETS', False)\n"
        "os.setsid = lambda: None\n"
        "admin = asys._systemBase.adminAddr\n"
        "base = getattr(asys, '_systemBase')\n"
        "os.environ['X'] = '1'\n"  # not a Thespian attribute
    )
    lines = sorted(int(touch.split(":")[0].removeprefix("line ")) for touch in
                   thespian_touches(source))
    assert lines == [5, 6, 7, 8, 9, 10, 11]


ADDED_BY_BRAIN = {"pid", "exitcode", "DefaultSelector"}
"""Attributes a patch gives objects of its own making or adds to Thespian's (a
ChildActorExited's `pid` and `exitcode`; the `selectors` copy's `DefaultSelector`), which
Thespian does not have; Brain's own marks on Thespian's objects start with `brain_`."""


def assigned_attributes(path: Path) -> set[str]:
    """The attribute names `path` assigns or deletes on objects not of its own classes."""
    tree = ast.parse(path.read_text())
    own_classes = [node for node in ast.walk(tree) if isinstance(node, ast.ClassDef)]
    in_own_class = {id(sub) for cls in own_classes for sub in ast.walk(cls)}
    names = set()
    for node in ast.walk(tree):
        targets: list[ast.expr] = []
        if isinstance(node, (ast.Assign, ast.Delete)):
            targets = list(node.targets)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        for target in targets:
            if isinstance(target, ast.Attribute) and id(target) not in in_own_class \
                    and not ast.unparse(target).startswith("os."):
                names.add(target.attr)
    return {name for name in names if not name.startswith("brain_")} - ADDED_BY_BRAIN


@pytest.mark.parametrize("patch", list(PATCHES))
def test_every_attribute_a_module_sets_on_thespian_is_in_its_entry(patch: str) -> None:
    from brain.actors.thespian.fit import PATCH_MODULES

    assigned = assigned_attributes(THESPIAN_DIR / f"{PATCH_MODULES[patch]}.py")
    assert assigned - table_names(patch) == set()


def test_the_assignment_scan_finds_what_it_should() -> None:
    assert assigned_attributes(THESPIAN_DIR / "confine.py") == {
        "__init__", "bindname", "REUSE_SOCKETS", "LISTEN_DEPTH"}
    assert {"stage", "_next_XMIT_1"} <= assigned_attributes(THESPIAN_DIR / "reuse.py")
    assert "_masks" not in assigned_attributes(THESPIAN_DIR / "poll.py")  # OneShotPoll's own
