"""conf/Dockerfile builds an image whose `brain serve` answers, with the data dir on a volume.

Only where a container tool answers (docker or podman); skipped, with the reason, elsewhere.
"""

from __future__ import annotations

import shutil
import subprocess
import time
import uuid
from pathlib import Path

import pytest
import requests

from tests.support.server import free_port

REPO = Path(__file__).resolve().parents[2]
BUILD_TIMEOUT_SECS = 900


def container_tool() -> str | None:
    for tool in ("docker", "podman"):
        path = shutil.which(tool)
        if path is None:
            continue
        try:
            answered = subprocess.run([path, "info"], capture_output=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if answered.returncode == 0:
            return path
    return None


def test_the_image_serves_with_its_data_on_a_volume() -> None:
    tool = container_tool()
    if tool is None:
        pytest.skip("no docker or podman that answers `info` on this machine")
    tag = f"brain-test:{uuid.uuid4().hex[:8]}"
    volume = f"brain-test-{uuid.uuid4().hex[:8]}"
    built = subprocess.run([tool, "build", "-f", str(REPO / "conf" / "Dockerfile"), "-t", tag,
                            str(REPO)], capture_output=True, text=True, timeout=BUILD_TIMEOUT_SECS)
    if built.returncode != 0 and "pull" in built.stderr.lower():
        pytest.skip(f"the base image cannot be fetched here: {built.stderr[-300:]}")
    assert built.returncode == 0, built.stderr[-3000:]
    port = free_port()
    name = f"brain-test-{uuid.uuid4().hex[:8]}"
    try:
        subprocess.run([tool, "run", "-d", "--name", name, "-p", f"127.0.0.1:{port}:3210",
                        "-e", "BRAIN_API_TOKEN=t", "-v", f"{volume}:/var/lib/brain", tag],
                       check=True, capture_output=True, timeout=120)
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if requests.get(url + "/readyz", timeout=2).status_code == 200:
                    break
            except requests.RequestException:
                pass
            time.sleep(0.5)
        auth = {"Authorization": "Bearer t"}
        sid = requests.post(url + "/v1/sessions", json={}, headers=auth, timeout=60).json()["id"]
        listed = subprocess.run([tool, "exec", name, "ls", f"/var/lib/brain/sessions/{sid}"],
                                capture_output=True, text=True, timeout=60)
        assert "journal" in listed.stdout  # the journal is on the volume
        stopped = subprocess.run([tool, "stop", "-t", "90", name], capture_output=True,
                                 timeout=120)
        assert stopped.returncode == 0
    finally:
        subprocess.run([tool, "rm", "-f", name], capture_output=True, timeout=60)
        subprocess.run([tool, "volume", "rm", "-f", volume], capture_output=True, timeout=60)
        subprocess.run([tool, "rmi", "-f", tag], capture_output=True, timeout=120)
