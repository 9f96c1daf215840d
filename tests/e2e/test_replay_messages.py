"""`brain replay`'s divergence message at the return: outputs quoted as JSON, never cut.

A real server journals a turn whose loop reads kv and returns the answer; `brain replay` (a
real process) then runs loops that make the same calls but return something else.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.agentloop.helpers import compile_guest, wat_string
from tests.support.server import BrainServer, configured

REPLAY_TIMEOUT_SECS = 120
READ = b'{"op":"kv.read","key":"k"}'
LONG = {"text": "a long answer, " * 40, "n": 1}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[BrainServer, str, Path]]:
    """A session whose one turn read a missing kv key and completed with what it was told."""
    tmp_path = tmp_path_factory.mktemp("replay_messages")
    guests = tmp_path / "guests"
    reader = compile_guest("send_const", guests, request=wat_string(READ),
                           request_len=len(READ))
    server = configured(tmp_path, f'[agentloops.reader]\npath = "{reader}"\n').start()
    try:
        sid = server.create_session(agentloop="reader")["id"]
        answer = server.send(sid, "read")
        assert answer["output"] == {"found": False, "value": None}, answer
        yield server, sid, guests
    finally:
        server.kill()


def returning(result: dict[str, Any], guests: Path) -> Path:
    """A loop that makes no guest call and returns `result`."""
    data = json.dumps(result).encode()
    return compile_guest("return_packed", guests, text=wat_string(data),
                         packed=(1024 << 32) | len(data))


def replay(server: BrainServer, sid: str, loop: Path, *flags: str
           ) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "-m", "brain.cli", "replay", sid, "--agentloop",
                           str(loop), "--data-dir", str(server.data_dir), *flags],
                          capture_output=True, text=True, timeout=REPLAY_TIMEOUT_SECS,
                          env=dict(os.environ))
    assert done.returncode == 1, done.stdout + done.stderr
    return done


def test_outputs_are_quoted_as_json(served: tuple[BrainServer, str, Path]) -> None:
    server, sid, guests = served
    loop = returning({"status": "completed", "output": "other"}, guests)
    message = json.loads(replay(server, sid, loop, "--json").stdout)["divergence"]["message"]
    assert message == ('the Agentloop made every call the journal holds, then returned output '
                       '"other", but the turn came to output {"found": false, "value": null}')
    text = replay(server, sid, loop).stdout.splitlines()
    assert f"     {message}" in text
    journal = '     journal: {"output": {"found": false, "value": null}, "status": "completed"}'
    assert journal in text


def test_a_failure_is_named_by_its_code_in_json(served: tuple[BrainServer, str, Path]) -> None:
    server, sid, guests = served
    loop = returning({"status": "failed", "error": {"code": "my_code", "message": "no"}}, guests)
    message = json.loads(replay(server, sid, loop, "--json").stdout)["divergence"]["message"]
    assert message.endswith('returned failure "my_code", but the turn came to output '
                            '{"found": false, "value": null}')


def test_a_long_output_is_named_never_cut(served: tuple[BrainServer, str, Path]) -> None:
    server, sid, guests = served
    loop = returning({"status": "completed", "output": LONG}, guests)
    divergence = json.loads(replay(server, sid, loop, "--json").stdout)["divergence"]
    size = len(json.dumps(LONG, sort_keys=True))
    assert divergence["message"] == (
        f"the Agentloop made every call the journal holds, then returned an output of {size} "
        "characters of JSON (whole in the report's `asked`), but the turn came to output "
        '{"found": false, "value": null}')
    assert divergence["asked"] == {"status": "completed", "output": LONG}
