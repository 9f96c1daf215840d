"""A trace file read back: lines in time order, grouped by session, with a lane per actor.

Every process stamps its lines with the machine's monotonic clock (`t_us`), which all
processes of one host share, so sorting by it orders the whole system's messages.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from brain.tracing.lines import suspension_note


class TraceUnreadable(ValueError):
    """The file is missing or holds no trace line."""


def load(path: Path) -> list[dict[str, Any]]:
    """Every well-formed line, in time order; a torn last line (a killed writer) is skipped."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise TraceUnreadable(f"{path}: {exc.strerror}") from None
    lines = []
    for number, raw in enumerate(text.splitlines(), 1):
        try:
            line = json.loads(raw)
        except ValueError:
            continue
        if isinstance(line, dict) and isinstance(line.get("t_us"), int):
            line["line"] = number
            lines.append(line)
    lines.sort(key=lambda line: line["t_us"])
    return lines


def sessions_of(lines: list[dict[str, Any]]) -> list[str]:
    """Session ids in order of first appearance."""
    seen: dict[str, None] = {}
    for line in lines:
        if line.get("session_id"):
            seen.setdefault(line["session_id"], None)
    return list(seen)


def select(lines: list[dict[str, Any]], session: str | None = None,
           request: str | None = None) -> list[dict[str, Any]]:
    """One session's lines; with `request`, only from that request's first line to its last."""
    if request is not None:
        ours = [line for line in lines if line.get("request_id") == request]
        if not ours:
            return []
        first, last = ours[0]["t_us"], ours[-1]["t_us"]
        sessions = {line.get("session_id") for line in ours} - {None}
        return [line for line in lines if first <= line["t_us"] <= last
                and line.get("session_id") in sessions
                and (session is None or line.get("session_id") == session)]
    return [line for line in lines if session is None or line.get("session_id") == session]


@dataclass(frozen=True)
class Arrow:
    """One row of a diagram: a message between lanes, or a commit on one lane."""

    t_us: int
    source: int
    target: int | None  # None: a commit point (or a message to an actor outside the trace)
    label: str
    commit: bool = False


def lanes_and_arrows(lines: list[dict[str, Any]],
                     everything: list[dict[str, Any]]) -> tuple[list[str], list[Arrow]]:
    """Lanes (one per actor, named `kind` or `kind:port` when a kind has several) and arrows.

    A message is drawn once, from its send; its receive line is drawn only when the send is
    not in the trace. Replies go to a web worker's private endpoint, which is named through
    the request id the worker sent.
    """
    names = _lane_names(everything)
    by_request = {line["request_id"]: line["actor"] for line in everything
                  if line.get("kind") == "gateway" and line.get("request_id")}
    order: list[str] = []

    def lane(address: str) -> int:
        name = names.get(address, address)
        if name not in order:
            order.append(name)
        return order.index(name)

    sent = {_key(line) for line in everything if line["dir"] == "send"}
    arrows = []
    for line in lines:
        label = _label(line)
        if line["dir"] in ("commit", "mark"):
            arrows.append(Arrow(line["t_us"], lane(line["actor"]), None, label, commit=True))
        elif line["dir"] == "send":
            peer = line.get("peer", "?")
            if peer not in names and line.get("request_id") in by_request:
                peer = by_request[line["request_id"]]
            arrows.append(Arrow(line["t_us"], lane(line["actor"]), lane(peer), label))
        elif _key(line) not in sent:  # a timer, or a message from outside the trace
            arrows.append(Arrow(line["t_us"], lane(line.get("peer", "?")), lane(line["actor"]),
                                label))
    return order, arrows


def _key(line: dict[str, Any]) -> tuple[Any, ...]:
    return (line["msg"], line.get("request_id"), line.get("session_id"),
            tuple(line.get("seqs", ())), line.get("outcome"))


def _lane_names(lines: list[dict[str, Any]]) -> dict[str, str]:
    kinds: dict[str, str] = {}
    for line in lines:
        kinds.setdefault(line["actor"], line.get("kind", "actor"))
    count: dict[str, int] = {}
    for kind in kinds.values():
        count[kind] = count.get(kind, 0) + 1
    names: dict[str, str] = _OutsideNames()
    for address, kind in kinds.items():
        if count[kind] == 1:
            names[address] = kind
        else:
            suffix = address.rsplit(":", 1)[-1].rstrip(")") if ":" in address else address
            names[address] = f"{kind}:{suffix.removeprefix('web-')}"
    return names


class _OutsideNames(dict):
    """Addresses of actors that wrote no line (Thespian's admin, a web endpoint): `other:PORT`."""

    def get(self, address: str, default: Any = None) -> str:  # type: ignore[override]
        if address in self:
            return self[address]
        return "other:" + address.rsplit(":", 1)[-1].rstrip(")") if ":" in address else address


def _label(line: dict[str, Any]) -> str:
    if line["dir"] == "commit":
        return "commit " + ",".join(str(seq) for seq in line.get("seqs", []))
    if line["dir"] == "mark":  # a moment of a session's life that is no message
        return line["msg"]
    text = line["msg"]
    if line.get("command"):
        text += f"({line['command']})"
    if line.get("fenced_by") is not None:
        text += f" fenced by {line['fenced_by']}"
    elif line.get("seqs"):
        text += " seq " + ",".join(str(seq) for seq in line["seqs"])
    if line.get("outcome"):
        text += f" → {line['outcome']}"
    if line.get("request_id") and line["msg"] in ("ToSession", "Reply"):
        text += f" [{line['request_id']}]"
    return text + suspension_note(line)
