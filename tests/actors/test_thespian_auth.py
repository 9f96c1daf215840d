"""Only frames signed with the actor secret are unpickled (brain/actors/thespian/auth.py; report 9
of
docs/thespian-patches.md). The patch is per process, so everything that applies it runs in a
scenario of its own interpreter (tests/support/thespian_scenarios.py)."""

from __future__ import annotations

import hashlib
import hmac
import logging
import pickle
import re
import subprocess
import sys
from pathlib import Path

import pytest

from brain.actors.thespian import auth as thespian_auth
from brain.actors.thespian.auth import TAG_BYTES, sign, verified_payload
from tests.support.thespian_scenarios import (
    ANOTHER_SECRET,
    SCENARIO_SECRET,
    run_scenario,
    thespian_frame,
    with_tag,
)

REPO = Path(__file__).resolve().parents[2]
SECRET = bytes(range(32))


def test_a_signed_body_is_the_hmac_sha256_of_the_pickle_then_the_pickle() -> None:
    payload = pickle.dumps(("sender", {"a": 1}))
    body = sign(SECRET, payload)
    assert TAG_BYTES == 32
    assert body[:TAG_BYTES] == hmac.new(SECRET, payload, hashlib.sha256).digest()
    assert body[TAG_BYTES:] == payload
    assert bytes(verified_payload(SECRET, body) or b"") == payload
    assert body == with_tag(SECRET, payload)  # what the scenarios forge with


def test_a_body_fails_with_another_key_a_changed_byte_or_too_short() -> None:
    payload = pickle.dumps("hello")
    body = sign(SECRET, payload)
    assert verified_payload(ANOTHER_SECRET, body) is None
    assert verified_payload(None, body) is None  # without a secret nothing verifies
    for index in (0, TAG_BYTES - 1, TAG_BYTES, len(body) - 1):
        changed = bytearray(body)
        changed[index] ^= 1
        assert verified_payload(SECRET, bytes(changed)) is None, index
    assert verified_payload(SECRET, body[:TAG_BYTES - 1]) is None
    assert verified_payload(SECRET, payload) is None  # a plain pickle, as Thespian ships it
    assert verified_payload(SECRET, body[:TAG_BYTES]) is None  # a tag of nothing, not signed


def test_the_frame_keeps_thespians_length_prefix_over_the_signed_body() -> None:
    body = sign(SECRET, pickle.dumps("x"))
    frame = thespian_frame(body)
    length, _, rest = frame.partition(b">")
    assert int(length) == len(rest) == len(body)


def test_a_forged_message_is_dropped_unread_and_the_port_still_serves() -> None:
    shipped = run_scenario("forged-message", patched=False)
    assert shipped["created"], "as Thespian ships, a pickle sent to its port runs code"
    fixed = run_scenario("forged-message", patched=True)
    assert fixed["created"] is False
    for forged in ("unsigned", "wrong_key"):
        assert fixed[forged] == {"answer": "data-error, signed", "delivered": False}, forged
    assert fixed["then"]["arrived"] and fixed["then"]["status"] == "+SENDSTS_SENT"
    assert fixed["fits_after"] is True  # thespian_fit still recognizes the patched Thespian


def test_a_forged_reply_is_never_loaded_and_the_send_fails() -> None:
    shipped = run_scenario("forged-reply", patched=False)
    assert shipped["created"], "as Thespian ships, a sender loads whatever answers it"
    fixed = run_scenario("forged-reply", patched=True)
    assert fixed == {"created": False, "status": "-BadPacketError"}


def test_a_dropped_frame_warns_once_per_sender_and_period(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    now = [1000.0]
    monkeypatch.setattr(thespian_auth.time, "monotonic", lambda: now[0])
    monkeypatch.setattr(thespian_auth, "_last_warnings", {})
    with caplog.at_level(logging.WARNING, logger=thespian_auth.__name__):
        for _ in range(3):
            thespian_auth.warn_dropped("a message from 127.0.0.9", "127.0.0.9")
        thespian_auth.warn_dropped("a message from 127.0.0.8", "127.0.0.8")
        now[0] += thespian_auth.WARN_EVERY_SECS
        thespian_auth.warn_dropped("a message from 127.0.0.9", "127.0.0.9")
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 3, lines
    assert all(r.levelno == logging.WARNING for r in caplog.records)
    assert lines[0].startswith("dropped a message from 127.0.0.9 unread: not signed")
    assert "more dropped" not in lines[0]
    assert lines[2].endswith("(2 more dropped since the last warning)")


def test_every_process_that_confines_thespian_also_signs_its_frames() -> None:
    """confine_thespian() is called by each process that opens a Thespian transport; each of
    them must authenticate too, or it would speak (and accept) unsigned frames."""
    callers = [path for path in (REPO / "brain").rglob("*.py")
               if re.search(r"\bconfine_thespian\(", path.read_text())
               and path.name != "confine.py"]
    assert callers, "no caller of confine_thespian found"
    for path in callers:
        assert "authenticate_actor_messages(" in path.read_text(), path


def test_a_second_secret_in_one_process_is_refused() -> None:
    code = ("from brain.actors.thespian.auth import authenticate_actor_messages as a\n"
            f"a({SCENARIO_SECRET!r}); a({SCENARIO_SECRET!r})\n"
            "try:\n"
            f"    a({ANOTHER_SECRET!r})\n"
            "except RuntimeError as exc:\n"
            "    print(exc)\n")
    run = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                         text=True, timeout=60)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "already signed with another actor secret" in run.stdout
