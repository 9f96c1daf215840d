"""The `brain` command's help and version, as a user runs them."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import version


def brain(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "brain.cli", *args], capture_output=True,
                          text=True, timeout=30)


def test_version_comes_from_the_package_metadata() -> None:
    done = brain("--version")
    assert done.returncode == 0, done
    assert done.stdout.strip() == f"brain {version('brain')}"


def test_serve_help_says_what_runs_where_data_goes_and_how_to_configure() -> None:
    done = brain("serve", "--help")
    assert done.returncode == 0, done
    text = " ".join(done.stdout.split())
    assert "actor system" in text and "gunicorn" in text
    assert "BRAIN_DATA_DIR" in text and "./brain-data" in text
    assert "BRAIN_CONFIG" in text and "brain settings" in text
    for flag in ("--data-dir", "--listen"):
        described = text.split(flag, 2)[-1].split("--")[0]
        assert len(described.split()) >= 3, f"{flag} has no description: {text}"
