"""Every journal record kind is spelled once, in brain/protocol/records.py, and what it declares
holds: the builders write its fields, and clients see exactly its public kinds as Events."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

from brain.journal import JournalWriter, SessionReader, empty_projection
from brain.journal.projection import fold_all
from brain.protocol import records as registry
from brain.protocol.records import KINDS, PRIVATE_RECORDS, PUBLIC_RECORDS, RECORD_NAMES, Shown
from brain.sessions import records

ROOT = Path(__file__).resolve().parents[1]
REGISTRY = Path("brain/protocol/records.py")
NAMES = RECORD_NAMES | {registry.TRANSCRIPT_REPLACED}

NOT_RECORD_KINDS = {
    (Path("brain/errors.py"), "session_ended"): 1,
    (Path("brain/client/errors.py"), "session_ended"): 1,
}
"""Strings that happen to equal a kind but name something else: the `session_ended` error code
(409, "the session is ended"), declared with the errors, and its entry in the client's table."""


def docstrings(tree: ast.AST) -> set[int]:
    """The string statements of a module: docstrings, and the attribute docstrings after an
    assignment."""
    return {id(node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)}


def spelled_kinds(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(), str(path))
    skip = docstrings(tree)
    return sorted((node.lineno, node.value) for node in ast.walk(tree)
                  if isinstance(node, ast.Constant) and isinstance(node.value, str)
                  and node.value in NAMES and id(node) not in skip)


def test_no_kind_is_spelled_outside_the_registry() -> None:
    found: dict[str, list[tuple[int, str]]] = {}
    expected_elsewhere = dict(NOT_RECORD_KINDS)
    for top in ("brain", "tools"):
        for path in sorted((ROOT / top).rglob("*.py")):
            relative = path.relative_to(ROOT)
            if relative == REGISTRY:
                continue
            spelled = spelled_kinds(path)
            for _, value in list(spelled):
                if expected_elsewhere.get((relative, value), 0) > 0:
                    expected_elsewhere[(relative, value)] -= 1
                    spelled.remove(next(s for s in spelled if s[1] == value))
            if spelled:
                found[str(relative)] = spelled
    assert found == {}, "record kinds spelled outside brain/protocol/records.py: use its constants"
    assert all(count == 0 for count in expected_elsewhere.values()), expected_elsewhere


def test_the_scan_sees_a_spelled_kind(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text('"""turn_started"""\nX = "turn_started"\nY = "turn"\n'
                      'def f():\n    """model_call_started"""\n    return {"kind": "kv_put"}\n')
    assert spelled_kinds(module) == [(2, "turn_started"), (6, "kv_put")]


def test_every_kind_has_its_constant() -> None:
    constants = {value: name for name, value in vars(registry).items()
                 if name.isupper() and isinstance(value, str) and value in RECORD_NAMES}
    assert set(constants) == RECORD_NAMES
    assert all(name == value.upper() for value, name in constants.items())
    assert all(kind.name == name for name, kind in KINDS.items())
    assert PUBLIC_RECORDS | PRIVATE_RECORDS == RECORD_NAMES
    assert not PUBLIC_RECORDS & PRIVATE_RECORDS
    assert all(type(name) is str for name in RECORD_NAMES)  # the journal's own strings


def test_effect_kinds_are_named_after_their_effect() -> None:
    for name, kind in KINDS.items():
        if kind.effect is not None:
            assert name == f"{kind.effect}_{kind.stage}"
            assert registry.effect_of(name) == kind.effect
    for effect in (*registry.EFFECTS, registry.ACTIVATION):
        assert registry.started_kind(effect) == f"{effect}_started"
        assert registry.ended_kind(effect) == f"{effect}_ended"
        assert registry.failed_kind(effect) == f"{effect}_failed"


ERROR = {"code": "boom", "message": "it broke"}
BUILT = [
    records.session_created({"environments": []}, 0),
    records.forked_from("s_parent", 7),
    records.session_ending(),
    records.session_ended(),
    records.session_failed("creation", "it broke"),
    records.transcript_changed({"start": 0, "items": [], "length": 0}),
    records.kv_put("k", 1),
    records.kv_delete("k"),
    records.extension_event("progress", {"n": 1}, "tool", 3),
    records.turn_started("hi", "sync"),
    records.turn_ended(1, "bye"),
    records.turn_failed(1, ERROR),
    records.cancel_requested(1),
    records.activation_started("default", 1),
    records.activation_ended(2),
    records.activation_failed(2, ERROR),
    records.model_call_started("scripted", 1, {}, [], {}),
    records.tool_call_started("echo", {"input": {}}, None),
    records.environment_op_started("box", "setup", {}),
    *(records.effect_ended(effect, 3, {}) for effect in registry.EFFECTS),
    *(records.effect_failed(effect, 3, "error", ERROR) for effect in registry.EFFECTS),
    records.webhook_delivery_pending("msg_1", {}),
    records.webhook_delivery_attempted("msg_1", 1, 500, "no", 1000),
    records.webhook_delivery_done("msg_1", 2, 200),
    records.webhook_delivery_abandoned("msg_1", 5, "gave up"),
]


@pytest.mark.parametrize("record", BUILT, ids=lambda r: r["kind"])
def test_the_builders_write_the_declared_fields(record: dict[str, Any]) -> None:
    kind = KINDS[record["kind"]]
    written = set(record) - {"kind"}
    assert set(kind.required) <= written <= kind.fields


def test_every_kind_has_a_builder() -> None:
    assert {record["kind"] for record in BUILT} == RECORD_NAMES


def a_journal_of_every_kind() -> list[dict[str, Any]]:
    """One session's records, built as the session builds them, with every kind at least
    once: a transcript appended to and then replaced, turns that end and fail, every effect
    answered and failed, webhook deliveries done and abandoned."""
    hello = {"role": "user", "content": [{"type": "text", "text": "hi"}]}
    return [
        records.forked_from("s_parent", 4),  # 1
        records.session_created({"environments": [{"name": "box"}]}, 0),  # 2
        records.environment_op_started("box", "setup", {}),  # 3
        records.effect_ended(registry.ENVIRONMENT_OP, 3, {}),  # 4
        records.turn_started("hi", "sync"),  # 5
        records.activation_started("default", 5),  # 6
        records.transcript_changed({"start": 0, "items": [hello], "length": 1}),  # 7
        records.kv_put("k", 1),  # 8
        records.kv_delete("k"),  # 9
        records.model_call_started("scripted", 1, {}, ["echo"], {}),  # 10
        records.effect_ended(registry.MODEL_CALL, 10, {"content": []}),  # 11
        records.tool_call_started("echo", {"input": {}}, None),  # 12
        records.extension_event("progress", {"n": 1}, "tool", 12),  # 13
        records.effect_failed(registry.TOOL_CALL, 12, "error", ERROR),  # 14
        records.model_call_started("scripted", 2, {}, [], {}),  # 15
        records.effect_unanswered(registry.MODEL_CALL, 15, "no answer"),  # 16
        records.transcript_changed({"start": 0, "items": [hello, hello], "length": 2}),  # 17
        records.cancel_requested(5),  # 18
        records.activation_failed(6, ERROR),  # 19
        records.turn_failed(5, {"code": "cancelled", "message": "cancelled"}),  # 20
        records.webhook_delivery_pending("msg_1", {"sequence": 5}),  # 21
        records.webhook_delivery_attempted("msg_1", 1, 500, "no", 1000),  # 22
        records.webhook_delivery_abandoned("msg_1", 1, "gave up"),  # 23
        records.turn_started("again", "sync"),  # 24
        records.activation_started("default", 24),  # 25
        records.activation_ended(25),  # 26
        records.turn_ended(24, "bye"),  # 27
        records.webhook_delivery_pending("msg_2", {"sequence": 24}),  # 28
        records.webhook_delivery_done("msg_2", 1, 200),  # 29
        records.environment_op_started("box", "teardown", {}),  # 30
        records.effect_failed(registry.ENVIRONMENT_OP, 30, "error", ERROR),  # 31
        records.tool_call_started("echo", {"input": {}}, None),  # 32
        records.effect_ended(registry.TOOL_CALL, 32, {"content": "ok"}),  # 33
        records.session_ending(),  # 34
        records.session_ended(),  # 35
        records.session_failed("late", "written only to be shown"),  # 36
    ]


def test_clients_see_exactly_the_public_kinds(tmp_path: Path) -> None:
    session_dir = tmp_path / "s_every_kind"
    writer = JournalWriter.open(session_dir / "journal")
    try:
        committed = writer.append(a_journal_of_every_kind())
    finally:
        writer.close()
    assert {record["kind"] for record in committed} == RECORD_NAMES
    events = {event["sequence"]: event for event in SessionReader(session_dir).events_after(0)}

    shown_as_itself = set()
    for record in committed:
        event = events.get(record["seq"])
        shown = KINDS[record["kind"]].shown
        if shown is Shown.AS_ITSELF:
            assert event is not None and event["kind"] == record["kind"], record
            shown_as_itself.add(record["kind"])
        elif shown is Shown.UNDER_ITS_NAME:
            assert event is not None and event["kind"] == record["name"], record
        elif shown is Shown.WHEN_REPLACING:
            replaces = record["start"] == 0 and record["seq"] == 17
            assert (event["kind"] if event else None) == \
                (registry.TRANSCRIPT_REPLACED if replaces else None), record
        else:
            assert event is None, record
    assert shown_as_itself == PUBLIC_RECORDS
    assert {r["kind"] for r in committed if r["seq"] not in events} <= PRIVATE_RECORDS
    assert fold_all(empty_projection(), committed).public_events == len(events)
