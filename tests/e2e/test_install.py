"""An installed Brain serves: a wheel in a fresh venv, without the dev extras, from any directory.

The wheel is built from this checkout and installed with its declared dependencies only, so a
dependency that only the dev extras (or the developer's venv) happened to bring shows up here as
a server that cannot start. The server then runs from a directory that is not the checkout.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.server import BrainServer
from tests.support.waiting import wait_for

REPO = Path(__file__).resolve().parents[2]
INSTALL_TIMEOUT_SECS = 300


def run(args: list[str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True,
                          timeout=INSTALL_TIMEOUT_SECS, check=True)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Built from a copy of the checkout: setuptools leaves a `build/` tree in the source it
    builds, whose stale modules would land in later wheels, and the checkout stays untouched."""
    source = tmp_path_factory.mktemp("source") / "brain"
    shutil.copytree(REPO, source, ignore=shutil.ignore_patterns(
        ".git", ".venv", "build", "*.egg-info", "__pycache__", "brain-data", ".*_cache"))
    out = tmp_path_factory.mktemp("wheel")
    run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", str(source), "-w", str(out)])
    (built,) = out.glob("brain-*.whl")
    return built


@pytest.fixture(scope="module")
def installed_python(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    venv = tmp_path_factory.mktemp("venv")
    run([sys.executable, "-m", "venv", str(venv)])
    run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", str(wheel)])
    yield str(venv / "bin" / "python")


def test_the_wheel_installs_only_the_brain_package(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        top_level = archive.read(next(n for n in names if n.endswith("top_level.txt")))
    assert top_level.decode().split() == ["brain"]
    assert {n.split("/")[0] for n in names if not n.startswith("brain-")} == {"brain"}
    for shipped in ("brain/web/gunicorn_conf.py", "brain/defaults.toml",
                    "brain/agentloop/default.wasm", "brain/journal/cli.py",
                    "brain/web/console/index.html", "brain/web/console/console.js",
                    "brain/web/console/console.css", "brain/chat/conversation.py",
                    "brain/tracing/command.py"):
        assert shipped in names


def test_an_installed_brain_serves_a_turn_from_another_directory(
        installed_python: str, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    where = run([installed_python, "-c", "import brain; print(brain.__file__)"], cwd=elsewhere)
    assert "site-packages" in where.stdout, where.stdout  # not this checkout
    trace = tmp_path / "trace.jsonl"
    server = BrainServer(tmp_path / "data", cwd=elsewhere, python=installed_python,
                         env={"BRAIN_TRACE": str(trace)}).start()
    try:
        session = server.create_session()
        answer = server.send(session["id"], "hello")
        assert answer["status"] == "ended" and answer["output"] == "echo: hello", answer
        assert (tmp_path / "data" / "sessions" / session["id"]).is_dir()
        for path in ("/console", "/console/console.js", "/console/console.css"):
            assert server.request("GET", path, token=None).status_code == 200, path
        # Trace lines reach the file within 100 ms; a SIGKILL before that would lose them.
        wait_for(lambda: trace.is_file() and '"RunModelCall"' in trace.read_text(), timeout=10)
    finally:
        server.kill()
    brain = str(Path(installed_python).parent / "brain")
    verified = subprocess.run([brain, "journal", "verify", session["id"]], cwd=elsewhere,
                              env={"BRAIN_DATA_DIR": str(tmp_path / "data"), "PATH": "/usr/bin"},
                              capture_output=True, text=True, timeout=60)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    checked = subprocess.run([brain, "trace", "--check", str(trace)], cwd=elsewhere,
                             env={"PATH": "/usr/bin"}, capture_output=True, text=True, timeout=60)
    assert checked.returncode == 0 and checked.stdout.startswith("ok: 1 effect"), (
        checked.stdout + checked.stderr)


def test_an_operator_gunicorn_config_is_used(tmp_path: Path) -> None:
    """conf/gunicorn.conf.py starts from the shipped values; a copy's changes take effect."""
    config = tmp_path / "gunicorn.conf.py"
    config.write_text((REPO / "conf" / "gunicorn.conf.py").read_text()
                      + '\naccesslog = "-"\naccess_log_format = "ACCESS %(r)s %(s)s"\n')
    server = BrainServer(tmp_path / "data", serve_args=("--gunicorn-config", str(config))).start()
    try:
        assert server.request("GET", "/v1/sessions").status_code == 200
        # gunicorn writes the access line after the answer is sent: wait for it, bounded.
        wait_for(lambda: "ACCESS GET /v1/sessions HTTP/1.1 200" in server.log() or None,
                 timeout=10)
    finally:
        server.kill()


def test_a_missing_gunicorn_config_is_refused_in_one_line(tmp_path: Path) -> None:
    serve = subprocess.run([sys.executable, "-m", "brain.cli", "serve", "--gunicorn-config",
                            str(tmp_path / "nope.py")],
                           env={"BRAIN_DATA_DIR": str(tmp_path / "data"), "PATH": "/usr/bin"},
                           capture_output=True, text=True, timeout=60)
    assert serve.returncode == 2
    assert serve.stderr.strip().splitlines() == [
        f"brain serve: --gunicorn-config: {tmp_path / 'nope.py'} is not a file"]
