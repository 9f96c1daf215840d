"""A script run from the folder above a checkout named `brain` imports the installed Brain.

A copy of this checkout, named `brain`, is installed into a fresh venv three ways: editable as
Brain's setup declares it (the checkout on sys.path), non-editable (a wheel), and editable with
setuptools' import hook (the setup without `package_dir`, as earlier checkouts installed). A
script beside the copy imports `brain` and the client. The first two import Brain; the hook
cannot win against the folder, and the client says so in one clear error.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
INSTALL_TIMEOUT_SECS = 300
SCRIPT = """\
import brain
from brain import __version__
from brain.client import Brain
print(brain.__file__, __version__, Brain.__name__)
"""


def run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, env=env,
                          timeout=INSTALL_TIMEOUT_SECS)


def installed(python: Path, *args: str, cwd: Path) -> None:
    done = run([str(python), "-m", "pip", "install", "-q", "--no-deps", *args], cwd)
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_checkout_named_brain_does_not_shadow_the_installed_package(tmp_path: Path) -> None:
    parent = tmp_path / "work"
    checkout = parent / "brain"
    shutil.copytree(REPO, checkout, ignore=shutil.ignore_patterns(
        ".git", ".venv", "build", "*.egg-info", "__pycache__", "brain-data", ".*_cache"))
    (parent / "script.py").write_text(SCRIPT)
    venv = tmp_path / "venv"
    assert run([sys.executable, "-m", "venv", str(venv)], tmp_path).returncode == 0
    python = venv / "bin" / "python"

    def script() -> subprocess.CompletedProcess[str]:
        return run([str(python), "script.py"], parent)

    installed(python, "-e", str(checkout), cwd=tmp_path)
    done = script()
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [str(checkout / "brain" / "__init__.py"), "0.1.0", "Brain"]

    installed(python, str(checkout), cwd=tmp_path)  # a wheel replaces the editable install
    done = script()
    assert done.returncode == 0, done.stderr
    assert "site-packages" in done.stdout.split()[0], done.stdout

    setup = checkout / "setup.cfg"
    setup.write_text(setup.read_text().replace("package_dir =\n    = .\n", ""))
    shutil.rmtree(checkout / "build", ignore_errors=True)
    installed(python, "-e", str(checkout), cwd=tmp_path)
    hooked = [p.name for p in (venv / "lib").glob("python*/site-packages/__editable__*finder.py")]
    assert hooked, "setuptools made no import hook: nothing left to check"
    client = run([str(python), "-c", "from brain.client import Brain"], parent)
    assert client.returncode == 1
    assert client.stderr.strip().splitlines()[-1] == (
        f"ImportError: `brain` was imported from the folder {checkout}, not from Brain's "
        "package: a script run from the folder that holds it takes it for an empty namespace "
        "package ahead of the installed Brain (an editable install made with setuptools' "
        f"import hook comes too late to win). Reinstall with `pip install -e {checkout}` (an "
        "editable install of a checkout puts it on sys.path, where such a folder cannot "
        "shadow it), or run the script from another directory.")
