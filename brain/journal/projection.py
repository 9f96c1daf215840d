"""Projections: session status, transcript, kv and unfinished work, as a pure fold of records.

`fold(projection, record) -> projection` needs no disk and never mutates its input, so it is
tested on its own and shared by the writer's owner (the session actor), the readers and the
checkpoint. `ProjectionBuilder` is the same fold applied in place, for replaying many records
without copying the transcript at every step; `fold` is defined through it, so the two cannot
disagree. Bump FOLD_VERSION whenever the fold changes: older checkpoints then count as stale.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from typing import Any

from brain.journal.errors import InvalidRecord
from brain.journal.events import PUBLIC_RECORDS, rfc3339_ms

FOLD_VERSION = 1

EFFECT_STARTS = frozenset({
    "activation_started", "model_call_started", "tool_call_started", "environment_op_started",
})  # fmt: skip
EFFECT_TERMINALS = frozenset({
    "activation_ended", "activation_failed", "model_call_ended", "model_call_failed",
    "tool_call_ended", "tool_call_failed", "environment_op_ended", "environment_op_failed",
})  # fmt: skip
SETTLED_STATUSES = frozenset({"ended", "failed"})


@dataclass(frozen=True)
class Projection:
    """Everything Brain derives from one session's journal, through `last_seq`.

    Treat the containers as read-only: `fold` copies a container before changing it. Times are
    integer epoch milliseconds. `unfinished_effects` maps each `*_started` sequence with no
    terminal record to its kind; `open_turn` and `open_activation` are the turn and activation
    still in flight. Restart recovery reads these to fail interrupted work without rerunning it.
    """

    last_seq: int = 0
    status: str | None = None
    created_at: int | None = None
    updated_at: int | None = None
    config: dict[str, Any] | None = None
    seeded: int = 0
    transcript: list[Any] = field(default_factory=list)
    kv: dict[str, Any] = field(default_factory=dict)
    turn: dict[str, Any] | None = None
    open_turn: int | None = None
    open_activation: int | None = None
    unfinished_effects: dict[int, str] = field(default_factory=dict)
    pending_setups: tuple[int, ...] = ()
    setups_done: int = 0
    failure: dict[str, Any] | None = None
    public_events: int = 0

    @classmethod
    def empty(cls) -> Projection:
        return cls()

    def status_view(self) -> dict[str, Any]:
        """`{status, created_at, updated_at, last_sequence, config, turn}` for the Session shape."""
        return {
            "status": self.status or "creating",
            "created_at": rfc3339_ms(self.created_at) if self.created_at is not None else None,
            "updated_at": rfc3339_ms(self.updated_at) if self.updated_at is not None else None,
            "last_sequence": self.last_seq,
            "config": self.config,
            "turn": dict(self.turn) if self.turn is not None else None,
        }

    def to_dict(self) -> dict[str, Any]:
        """A plain-data form (for the CBOR checkpoint); `from_dict` inverts it."""
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        data["pending_setups"] = list(self.pending_setups)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Projection:
        known = {f.name for f in fields(cls)}
        if set(data) != known:
            raise ValueError("projection fields do not match this version")
        values = dict(data)
        values["pending_setups"] = tuple(values["pending_setups"])
        values["unfinished_effects"] = {int(k): v for k, v in values["unfinished_effects"].items()}
        return cls(**values)


def empty_projection() -> Projection:
    return Projection()


class ProjectionBuilder:
    """The fold, applied in place to a private copy of a projection.

    Containers are copied the first time a record changes them, so building from a shared
    projection never disturbs it and replaying N records costs O(N), not O(N * transcript).
    """

    __slots__ = ("_values", "_owned", "_content")

    def __init__(self, base: Projection | None = None, *, content: bool = True) -> None:
        """`content=False` skips transcript and kv records (a status-only fold: the result's
        transcript, kv and public_events are not meaningful)."""
        base = base if base is not None else Projection()
        self._values = {f.name: getattr(base, f.name) for f in fields(Projection)}
        self._owned: set[str] = set()
        self._content = content

    @property
    def last_seq(self) -> int:
        return self._values["last_seq"]

    @property
    def transcript_length(self) -> int:
        return len(self._values["transcript"])

    def _own(self, name: str) -> Any:
        if name not in self._owned:
            self._values[name] = self._values[name].copy()
            self._owned.add(name)
        return self._values[name]

    def build(self) -> Projection:
        self._owned.clear()  # the new projection shares the containers from now on
        return Projection(**self._values)

    def apply_all(self, records: Iterable[dict[str, Any]]) -> ProjectionBuilder:
        for record in records:
            self.apply(record)
        return self

    def apply(self, record: dict[str, Any]) -> ProjectionBuilder:
        v = self._values
        seq = record["seq"]
        if seq != v["last_seq"] + 1:
            raise InvalidRecord(f"record {seq} does not follow {v['last_seq']}")
        kind = record["kind"]
        v["last_seq"] = seq
        v["updated_at"] = record["at"]
        public = kind in PUBLIC_RECORDS or kind == "extension_event"

        if not self._content and kind in ("transcript_changed", "kv_put", "kv_delete"):
            return self
        if kind == "transcript_changed":
            start, items, length = _delta(record)
            if start > len(v["transcript"]):
                raise InvalidRecord(
                    f"record {seq}: transcript delta starts at {start}, "
                    f"past the saved length {len(v['transcript'])}"
                )
            public = start < len(v["transcript"])
            transcript = self._own("transcript")
            del transcript[start:]
            transcript.extend(items)
        elif kind == "kv_put":
            self._own("kv")[record["key"]] = record.get("value")
        elif kind == "kv_delete":
            self._own("kv").pop(record["key"], None)
        elif kind == "session_created":
            config = record.get("config") or {}
            v["config"] = config
            v["created_at"] = record["at"]
            v["seeded"] = record.get("seeded", 0)
            v["status"] = "creating" if config.get("environments") else "idle"
        elif kind == "turn_started":
            v["open_turn"] = seq
            v["turn"] = {"sequence": seq, "status": "running"}
            if v["status"] not in SETTLED_STATUSES:
                v["status"] = "running"
        elif kind in ("turn_ended", "turn_failed"):
            started = record.get("started")
            if v["open_turn"] == started:
                v["open_turn"] = None
            turn: dict[str, Any] = {
                "sequence": started,
                "status": "ended" if kind == "turn_ended" else "failed",
            }
            if kind == "turn_failed":
                turn["error"] = record.get("error")
            v["turn"] = turn
            if v["status"] == "running":
                v["status"] = "idle"
        elif kind in EFFECT_STARTS:
            self._own("unfinished_effects")[seq] = kind
            if kind == "activation_started":
                v["open_activation"] = seq
            elif kind == "environment_op_started" and record.get("op") == "setup":
                v["pending_setups"] = (*v["pending_setups"], seq)
        elif kind in EFFECT_TERMINALS:
            started = record.get("started")
            if started in v["unfinished_effects"]:
                self._own("unfinished_effects").pop(started)
            if kind.startswith("activation_") and v["open_activation"] == started:
                v["open_activation"] = None
            if started in v["pending_setups"]:
                v["pending_setups"] = tuple(s for s in v["pending_setups"] if s != started)
                if kind == "environment_op_ended":
                    v["setups_done"] += 1
                    environments = (v["config"] or {}).get("environments") or []
                    if (
                        v["status"] == "creating"
                        and not v["pending_setups"]
                        and v["setups_done"] >= len(environments)
                    ):
                        v["status"] = "idle"
        elif kind == "session_ending":
            if v["status"] not in SETTLED_STATUSES:
                v["status"] = "ending"
        elif kind == "session_ended":
            v["status"] = "ended"
        elif kind == "session_failed":
            v["status"] = "failed"
            v["failure"] = record.get("error")
        if public:
            v["public_events"] += 1
        return self


def _delta(record: dict[str, Any]) -> tuple[int, list[Any], int]:
    start, items, length = record.get("start"), record.get("items"), record.get("length")
    if (
        not isinstance(start, int)
        or start < 0
        or not isinstance(items, list)
        or length != start + len(items)
    ):
        raise InvalidRecord(f"record {record.get('seq')}: malformed transcript delta")
    return start, items, length


def fold(projection: Projection, record: dict[str, Any]) -> Projection:
    """The projection after one more record. Pure: `projection` is left as it was."""
    return ProjectionBuilder(projection).apply(record).build()


def fold_all(projection: Projection, records: Iterable[dict[str, Any]]) -> Projection:
    """`fold` over many records, in O(records) rather than O(records * transcript)."""
    return ProjectionBuilder(projection).apply_all(records).build()
