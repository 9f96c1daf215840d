"""A failed turn's committed kv changes stay, and the kv reference a loop author reads says so.

A real server runs the host-script loop: a turn stores and removes keys, then fails at the
model-call limit the session asked for; the next turn reads kv as the failed one left it.
"""

from __future__ import annotations

import ast
import json
import shutil
from pathlib import Path

from tests.support.guests import example_guest
from tests.support.server import configured

ROOT = Path(__file__).resolve().parents[2]
ASK = {"op": "model.call", "messages": [{"role": "user",
                                         "content": [{"type": "text", "text": "hi"}]}]}


def test_kv_changes_outlive_the_turn_that_failed_after_them(tmp_path: Path) -> None:
    script = tmp_path / "host_script.wasm"
    shutil.copy(example_guest("host_script"), script)
    server = configured(tmp_path, f'[agentloops.script]\npath = "{script}"\n').start()
    try:
        sid = server.create_session(agentloop="script", limits={"max_model_calls": 1})["id"]
        assert server.send(sid, json.dumps([{"op": "kv.put", "key": "old", "value": 0}]))[
            "status"] == "ended"
        failed = server.send(sid, json.dumps([
            {"op": "kv.put", "key": "k", "value": 1}, {"op": "kv.delete", "key": "old"},
            ASK, ASK]))
        assert (failed["status"], failed["error"]["code"]) == ("failed", "model_call_limit")
        read = server.send(sid, json.dumps([{"op": "kv.read", "key": "k"},
                                            {"op": "kv.read", "key": "old"}]))
        assert read["output"] == [{"found": True, "value": 1}, {"found": False, "value": None}]
    finally:
        server.kill()


def test_the_kv_reference_says_a_failed_turn_keeps_its_changes() -> None:
    library = ast.parse((ROOT / "brain/agentloop/guest/brain_guest/kv.py").read_text())
    docstrings = {node.name: ast.get_docstring(node) or "" for node in library.body
                  if isinstance(node, ast.FunctionDef)}
    assert "does not undo it" in (ast.get_docstring(library) or "")
    for name in ("put", "delete"):
        assert "even if the turn then fails" in " ".join(docstrings[name].split()), name
    c_reference = (ROOT / "docs" / "agentloop.md").read_text()
    section = c_reference[c_reference.index("### kv.read, kv.put, kv.delete"):]
    section = " ".join(section[:section.index("```")].split())
    assert "A change is not undone when the turn fails after it" in section
    python_reference = (ROOT / "docs" / "agentloop-python.md").read_text()
    assert "the change stays if the turn then fails" in python_reference
