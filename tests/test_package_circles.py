"""No circle between Brain's rooms: folders import one another in one direction only.

A room is a package of brain/ (brain/journal, brain/sessions, ...) and, inside brain/actors/,
each wing (system/, registry/, session/, executors/, thespian/) apart from what the wings share
at its root. tests/test_import_cycles.py forbids circles between modules; this forbids them one
level up, where a reader sees the architecture: an arrow that runs back up (the session core
importing an actor, a wing importing the one that composes it) closes a circle here.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

BRAIN = Path(__file__).resolve().parents[1] / "brain"


def room(module: str) -> str:
    parts = module.split(".")
    if len(parts) > 2 and parts[1] == "actors" and (BRAIN / "actors" / parts[2]).is_dir():
        return ".".join(parts[:3])
    return ".".join(parts[:2])


def room_graph() -> dict[str, set[str]]:
    edges: dict[str, set[str]] = defaultdict(set)
    for path in BRAIN.rglob("*.py"):
        module = ".".join(path.relative_to(BRAIN.parent).with_suffix("").parts)
        module = module.removesuffix(".__init__")
        if module.count(".") < 1:
            continue
        source = room(module)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            for name in names:
                if name.startswith("brain.") and room(name) != source:
                    edges[source].add(room(name))
    return edges


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one room (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in edges.get(node, ()):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in list(edges):
        if node not in index:
            visit(node)
    return found


def test_no_circle_between_rooms() -> None:
    assert circles(room_graph()) == []


def test_the_check_sees_a_circle() -> None:
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_the_session_core_and_the_vocabulary_point_down_only() -> None:
    edges = room_graph()
    assert not {r for r in edges["brain.sessions"] if r.startswith(("brain.actors", "brain.web"))}
    assert edges["brain.protocol"] <= {"brain.effects"}
