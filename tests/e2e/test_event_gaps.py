"""Event sequences have gaps, and docs/http-api.md says which records make them.

A real server runs the host-script loop through kv changes and transcript appends; the Events
it serves skip exactly those records' sequences, and the Events section of the HTTP reference
names every kind of record that is never an Event of its own.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from brain.journal import JournalScan
from brain.protocol.records import EXTENSION_EVENT, PRIVATE_RECORDS
from tests.support.guests import example_guest
from tests.support.server import configured

ROOT = Path(__file__).resolve().parents[2]


def events_section() -> str:
    text = (ROOT / "docs" / "http-api.md").read_text()
    start = text.index("## GET /v1/sessions/{id}/events")
    return text[start:text.index("\n## ", start + 1)]


def test_the_missing_sequences_are_the_private_records_the_docs_name(tmp_path: Path) -> None:
    script = tmp_path / "host_script.wasm"
    shutil.copy(example_guest("host_script"), script)
    server = configured(tmp_path, f'[agentloops.script]\npath = "{script}"\n').start()
    try:
        sid = server.create_session(agentloop="script")["id"]
        said = {"role": "user", "content": [{"type": "text", "text": "hi"}]}
        answer = server.send(sid, json.dumps([
            {"op": "kv.put", "key": "k", "value": 1}, {"op": "kv.delete", "key": "k"},
            {"op": "transcript.set", "messages": [said]},
            {"op": "transcript.set", "messages": [said, said]}]))
        assert answer["status"] == "ended", answer
        served = {e["sequence"] for e in server.events(sid)}
    finally:
        server.kill()
    records = [f.record for f in JournalScan(server.data_dir / "sessions" / sid / "journal")]
    missing = [r["kind"] for r in records if r["seq"] not in served]
    assert missing == ["kv_put", "kv_delete", "transcript_changed", "transcript_changed"]

    section = events_section()
    assert re.search(r"sequences of a session's Events\s+have gaps", section), section[:600]
    named = set(re.findall(r"`([a-z_]+)\*?`", section))
    unnamed = {kind for kind in PRIVATE_RECORDS - {EXTENSION_EVENT}
               if kind not in named and not (kind.startswith("webhook_delivery_")
                                              and "webhook_delivery_" in named)}
    assert unnamed == set()
