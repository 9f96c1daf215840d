"""`brain trace --check` and the diagram on hand-made traces; the writer's file discipline."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from brain.cli import main

SID = "s1"


def line(t_us: int, direction: str, msg: str, **fields) -> dict:  # type: ignore[no-untyped-def]
    actor = {"session": "ActorAddr-(T|:1)", "tool_executor": "ActorAddr-(T|:2)"}
    kind = fields.pop("kind", "session")
    return {"t_us": t_us, "wall": "2026-01-01T00:00:00+00:00", "dir": direction, "kind": kind,
            "actor": actor[kind], "peer": actor["tool_executor" if kind == "session" else
                                                 "session"],
            "msg": msg, "session_id": SID, **fields}


def write(path: Path, lines: list[dict]) -> Path:
    path.write_text("".join(json.dumps(item) + "\n" for item in lines))
    return path


def test_a_send_before_its_commit_fails_the_check(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    bad = write(tmp_path / "bad.jsonl", [
        line(100, "commit", "commit", seqs=[4]),
        line(200, "send", "RunToolCall", seqs=[5], fenced_by=5),
        line(300, "commit", "commit", seqs=[5]),
    ])
    assert main(["trace", "--check", str(bad)]) == 1
    err = capsys.readouterr().err
    assert "line 2" in err and "RunToolCall" in err and "fenced by sequence 5" in err
    assert "100 µs before" in err


def test_a_send_with_no_commit_at_all_fails_and_a_fenced_one_passes(tmp_path: Path,
                                                                     capsys) -> None:  # type: ignore[no-untyped-def]
    missing = write(tmp_path / "missing.jsonl", [line(200, "send", "RunModelCall", seqs=[7],
                                                      fenced_by=7)])
    assert main(["trace", "--check", str(missing)]) == 1
    assert "which no commit line holds" in capsys.readouterr().err
    good = write(tmp_path / "good.jsonl", [
        line(100, "commit", "commit", seqs=[4, 5]),
        line(200, "send", "RunToolCall", seqs=[5], fenced_by=5),
        line(300, "recv", "RunToolCall", seqs=[5], fenced_by=5, kind="tool_executor"),
        line(400, "send", "EffectDone", seqs=[5], outcome="ok", kind="tool_executor"),
    ])
    assert main(["trace", "--check", str(good)]) == 0
    assert main(["trace", str(good), "--session", SID]) == 0
    out = capsys.readouterr().out
    assert "+100µs" in out and "RunToolCall fenced by 5" in out and "EffectDone seq 5 → ok" in out
    # The receive of a traced send is not drawn twice.
    assert out.count("RunToolCall fenced by 5") == 1


def test_a_missing_file_is_exit_2(tmp_path: Path) -> None:
    assert main(["trace", "--check", str(tmp_path / "none.jsonl")]) == 2


WRITER = """
import os, sys
os.environ["BRAIN_TRACE"] = sys.argv[1]
from brain.tracing import writer
out = writer.tracer()
for i in range(2000):
    out.write({"dir": "send", "msg": "X", "n": i, "pad": "p" * 300})
"""


def test_processes_appending_at_once_never_tear_a_line(tmp_path: Path) -> None:
    trace = tmp_path / "many.jsonl"
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(trace)]) for _ in range(4)]
    for proc in procs:
        assert proc.wait(timeout=60) == 0
    lines = [json.loads(raw) for raw in trace.read_text().splitlines()]  # each one whole
    assert len(lines) == 8000
    assert {line["pid"] for line in lines} == {proc.pid for proc in procs}
    assert os.stat(trace).st_mode & 0o777 == 0o600


def test_a_trace_file_that_cannot_be_opened_turns_tracing_off_with_one_line(
        tmp_path: Path) -> None:
    code = ("import os, sys; os.environ['BRAIN_TRACE'] = sys.argv[1]\n"
            "from brain.tracing import writer\n"
            "assert writer.tracer() is None and writer.tracer() is None\n")
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path / "no" / "dir.jsonl")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("not tracing") == 1
