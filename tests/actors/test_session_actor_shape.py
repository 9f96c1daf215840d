"""The session actor is one class that owns its session's state; its helpers are held, not mixed in.

A mixin declares the attributes it expects its host to have, so a reader of one file cannot tell
which state it owns or who sets it. The actor (brain/actors/session/actor.py) creates every
attribute of the session's state itself, and its helpers (journal.py, suspension.py,
pool_member.py, inline.py) are objects it holds by reference. These checks keep it that way.
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

from brain.actors.bridge import BridgedActor
from brain.actors.session import actor as actor_module
from brain.actors.session.actor import SessionActor

SESSION_DIR = Path(actor_module.__file__).parent

HANDLERS = ("Delivered", "WatchMessage", "EffectDone", "OutcomeBatch", "Parked",
            "WakeupMessage", "ActorExitRequest", "WarmUp", "ReportRelease")
"""Every message the session actor handles: Thespian finds a handler on the actor's class."""


def helper_modules() -> list[Path]:
    return sorted(p for p in SESSION_DIR.glob("*.py") if p.name != "actor.py")


def is_dataclass(node: ast.ClassDef) -> bool:
    for decorator in node.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
        if name == "dataclass":
            return True
    return False


def test_the_session_actor_derives_from_the_bridged_actor_alone() -> None:
    assert SessionActor.__bases__ == (BridgedActor,)


def test_every_handler_is_on_the_actor_class_itself() -> None:
    for name in HANDLERS:
        assert f"receiveMsg_{name}" in vars(SessionActor), name


def test_no_module_beside_the_actor_declares_attributes_for_a_host() -> None:
    """A class-level annotation with no value in a plain class is a mixin's declaration of its
    host's attributes; a dataclass's are its own fields."""
    found = []
    for path in helper_modules():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, ast.ClassDef) or is_dataclass(node):
                continue
            for item in node.body:
                if isinstance(item, ast.AnnAssign) and item.value is None:
                    found.append(f"{path.name}: {node.name}.{ast.unparse(item.target)}")
    assert found == []


def test_no_helper_handles_a_message() -> None:
    """Thespian dispatches on the actor's class: a handler on a helper would never be called."""
    found = []
    for path in helper_modules():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and node.name.startswith("receiveMsg_"):
                found.append(f"{path.name}: {node.name}")
    assert found == []


def created_by_the_actor() -> set[str]:
    """The attributes `SessionActor.__init__` and `_fresh_session_state` create."""
    names = set()
    for method in (SessionActor.__init__, SessionActor._fresh_session_state):
        tree = ast.parse(inspect.cleandoc("\n" + inspect.getsource(method)))
        for node in ast.walk(tree):
            targets = node.targets if isinstance(node, ast.Assign) else \
                [node.target] if isinstance(node, ast.AnnAssign) else []
            for target in targets:
                for each in ast.walk(target):
                    if isinstance(each, ast.Attribute) and isinstance(each.value, ast.Name) \
                            and each.value.id == "self":
                        names.add(each.attr)
    return names


def test_every_attribute_a_helper_sets_on_the_actor_is_created_by_the_actor() -> None:
    """A helper changes the actor's state (`actor.writer = ...`), never adds to it."""
    created = created_by_the_actor() | {"bridge"}  # BridgedActor's
    found = []
    for path in helper_modules():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            targets = node.targets if isinstance(node, ast.Assign) else \
                [node.target] if isinstance(node, ast.AugAssign | ast.AnnAssign) else []
            for target in targets:
                for each in ast.walk(target):
                    if isinstance(each, ast.Attribute) and isinstance(each.value, ast.Name) \
                            and each.value.id == "actor" and each.attr not in created:
                        found.append(f"{path.name}: actor.{each.attr}")
    assert found == []


def test_the_actor_creates_its_session_state_and_helpers() -> None:
    created = created_by_the_actor()
    for name in ("core", "writer", "kept", "guest_calls", "next_call_id", "stopper",
                 "activation", "metrics", "latencies", "otel_spans", "lease", "state_lock",
                 "_void_activations", "journal", "suspension", "pool", "inline"):
        assert name in created, name
