"""The SDK's error classes against the server's own codes (brain/errors.py), no server needed.

The SDK cannot import brain/errors.py (it is vendored without the server), so it declares its
classes itself; these tests fail as soon as the two disagree: a code the server gained that the
SDK does not know (it would be raised as a bare status class), a code the SDK knows that the
server no longer sends, or one status that differs.
"""

from __future__ import annotations

import re
from pathlib import Path

import brain.client
from brain import errors as server
from brain.client import errors as client

DOCS = Path(__file__).resolve().parents[2] / "docs" / "client.md"


def test_the_sdk_knows_exactly_the_servers_codes() -> None:
    assert sorted(client.BY_CODE) == sorted(server.BY_CODE)


def test_each_code_has_the_servers_status() -> None:
    assert {code: cls.status for code, cls in client.BY_CODE.items()} == \
        {code: cls.status for code, cls in server.BY_CODE.items()}


def test_each_code_is_raised_as_its_class() -> None:
    for code, cls in client.BY_CODE.items():
        body = f'{{"error": {{"code": "{code}", "message": "m", "request_id": "r"}}}}'
        raised = client.api_error(cls.status, body.encode(), {"retry-after": "5"})
        assert type(raised) is cls and raised.code == code and raised.retry_after == 5.0


def test_every_error_class_is_exported_and_documented() -> None:
    documented = set(re.findall(r"`(\w+)`", DOCS.read_text()))
    for cls in client.BY_CODE.values():
        assert cls.__name__ in brain.client.__all__, cls
        assert getattr(brain.client, cls.__name__) is cls
        assert cls.__name__ in documented, f"docs/client.md does not name {cls.__name__}"
