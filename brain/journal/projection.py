"""Projections: session status, transcript, kv and unfinished work, as a pure fold of records.

`fold(projection, record) -> projection` needs no disk and never mutates its input, so it is
tested on its own and shared by the writer's owner (the session actor), the readers and the
checkpoint. `ProjectionBuilder` is the same fold applied in place, for replaying many records
without copying the transcript at every step; `fold` is defined through it, so the two cannot
disagree. Bump FOLD_VERSION whenever the fold changes: older checkpoints then count as stale.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, fields
from typing import Any

from brain.journal.errors import InvalidRecord
from brain.journal.events import rfc3339_ms
from brain.journal.transcript_text import TranscriptList
from brain.protocol.records import (
    ACTIVATION_ENDS,
    ACTIVATION_STARTED,
    ALWAYS_SHOWN,
    CANCEL_REQUESTED,
    EFFECT_STARTS,
    EFFECT_TERMINALS,
    ENVIRONMENT_OP_ENDED,
    ENVIRONMENT_OP_STARTED,
    EXTENSION_EVENT,
    FORKED_FROM,
    KV_DELETE,
    KV_PUT,
    SESSION_CREATED,
    SESSION_ENDED,
    SESSION_ENDING,
    SESSION_FAILED,
    TRANSCRIPT_CHANGED,
    TURN_ENDED,
    TURN_FAILED,
    TURN_STARTED,
    WEBHOOK_DELIVERY_ABANDONED,
    WEBHOOK_DELIVERY_ATTEMPTED,
    WEBHOOK_DELIVERY_DONE,
    WEBHOOK_DELIVERY_PENDING,
)

FOLD_VERSION = 2

SETTLED_STATUSES = frozenset({"ended", "failed"})


@dataclass(frozen=True)
class Projection:
    """Everything Brain derives from one session's journal, through `last_seq`.

    Treat the containers as read-only: `fold` copies a container before changing it. Times are
    integer epoch milliseconds. `unfinished_effects` maps each `*_started` sequence with no
    terminal record to its kind; `open_turn` and `open_activation` are the turn and activation
    still in flight. Restart recovery reads these to fail interrupted work without rerunning it.
    `webhooks_pending` maps each webhook delivery with no `done` or `abandoned` record to
    `{body, attempts}`: what a restart resumes.
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
    webhooks_pending: dict[str, dict[str, Any]] = field(default_factory=dict)

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
            old = self._values[name]
            # The transcript is a TranscriptList once changed (whose copy keeps its text), so
            # the text a checkpoint gives it, or remembers for it, lasts across later appends.
            if name == "transcript" and not isinstance(old, TranscriptList):
                self._values[name] = TranscriptList(old)
            else:
                self._values[name] = old.copy()
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
        folder = _FOLDERS.get(kind)
        if folder is None:
            # Every kind the session writes is in the table; anything else is a bug or a
            # journal from elsewhere, never a record to skip without a word.
            raise InvalidRecord(f"record {seq}: unknown kind {kind!r}")
        v["last_seq"] = seq
        v["updated_at"] = record["at"]
        if kind in _CONTENT_KINDS and not self._content:
            return self
        public = folder(self, v, record)
        if public is None:
            public = kind in _PUBLIC_KINDS
        if public:
            v["public_events"] += 1
        return self

    # --- one folder per kind (the table is _FOLDERS below) ------------------------------------
    # Each changes the values in place and returns None, or whether a `transcript_changed`
    # record is public (it is when it replaces saved items).

    def _transcript_changed(self, v: dict[str, Any], record: dict[str, Any]) -> bool:
        start, items, length = _delta(record)
        if start > len(v["transcript"]):
            raise InvalidRecord(
                f"record {record['seq']}: transcript delta starts at {start}, "
                f"past the saved length {len(v['transcript'])}"
            )
        public = start < len(v["transcript"])
        transcript = self._own("transcript")
        if start < transcript.encoded[0]:
            transcript.forget_text()  # the remembered JSON text no longer matches
        del transcript[start:]
        transcript.extend(items)
        return public

    def _kv_put(self, v: dict[str, Any], record: dict[str, Any]) -> None:
        self._own("kv")[record["key"]] = record.get("value")

    def _kv_delete(self, v: dict[str, Any], record: dict[str, Any]) -> None:
        self._own("kv").pop(record["key"], None)

    def _session_created(self, v: dict[str, Any], record: dict[str, Any]) -> None:
        config = record.get("config") or {}
        v["config"] = config
        v["created_at"] = record["at"]
        v["seeded"] = record.get("seeded", 0)
        v["status"] = "creating" if config.get("environments") else "idle"

    def _turn_started(self, v: dict[str, Any], record: dict[str, Any]) -> None:
        seq = record["seq"]
        v["open_turn"] = seq
        v["turn"] = {"sequence": seq, "status": "running"}
        if v["status"] not in SETTLED_STATUSES:
            v["status"] = "running"

    def _turn_over(self, v: dict[str, Any], record: dict[str, Any]) -> None:
        started = record.get("started")
        if v["open_turn"] == started:
            v["open_turn"] = None
        failed = record["kind"] == TURN_FAILED
        turn: dict[str, Any] = {"sequence": started, "status": "failed" if failed else "ended"}
        if failed:
            turn["error"] = record.get("error")
        v["turn"] = turn
        if v["status"] == "running":
            v["status"] = "idle"

    def _effect_started(self, v: dict[str, Any], record: dict[str, Any]) -> None:
        seq, kind = record["seq"], record["kind"]
        self._own("unfinished_effects")[seq] = kind
        if kind == ACTIVATION_STARTED:
            v["open_activation"] = seq
        elif kind == ENVIRONMENT_OP_STARTED and record.get("op") == "setup":
            v["pending_setups"] = (*v["pending_setups"], seq)

    def _effect_over(self, v: dict[str, Any], record: dict[str, Any]) -> None:
        started, kind = record.get("started"), record["kind"]
        if started in v["unfinished_effects"]:
            self._own("unfinished_effects").pop(started)
        if kind in ACTIVATION_ENDS and v["open_activation"] == started:
            v["open_activation"] = None
        if started in v["pending_setups"]:
            v["pending_setups"] = tuple(s for s in v["pending_setups"] if s != started)
            if kind == ENVIRONMENT_OP_ENDED:
                v["setups_done"] += 1
                environments = (v["config"] or {}).get("environments") or []
                if (
                    v["status"] == "creating"
                    and not v["pending_setups"]
                    and v["setups_done"] >= len(environments)
                ):
                    v["status"] = "idle"

    def _session_ending(self, v: dict[str, Any], record: dict[str, Any]) -> None:
        if v["status"] not in SETTLED_STATUSES:
            v["status"] = "ending"

    def _session_ended(self, v: dict[str, Any], record: dict[str, Any]) -> None:
        v["status"] = "ended"

    def _session_failed(self, v: dict[str, Any], record: dict[str, Any]) -> None:
        v["status"] = "failed"
        v["failure"] = record.get("error")

    def _webhook_pending(self, v: dict[str, Any], record: dict[str, Any]) -> None:
        self._own("webhooks_pending")[record["id"]] = {"body": record.get("body"),
                                                       "attempts": 0}

    def _webhook_attempted(self, v: dict[str, Any], record: dict[str, Any]) -> None:
        pending = v["webhooks_pending"].get(record["id"])
        if pending is not None:
            self._own("webhooks_pending")[record["id"]] = {**pending,
                                                           "attempts": record["attempt"]}

    def _webhook_over(self, v: dict[str, Any], record: dict[str, Any]) -> None:
        if record["id"] in v["webhooks_pending"]:
            self._own("webhooks_pending").pop(record["id"])

    def _no_change(self, v: dict[str, Any], record: dict[str, Any]) -> None:
        """A record that changes nothing but `last_seq`, `updated_at` and the Event count."""


_CONTENT_KINDS = frozenset({TRANSCRIPT_CHANGED, KV_PUT, KV_DELETE})
_FOLDERS: dict[str, Callable[[ProjectionBuilder, dict[str, Any], dict[str, Any]], bool | None]] = {
    TRANSCRIPT_CHANGED: ProjectionBuilder._transcript_changed,
    KV_PUT: ProjectionBuilder._kv_put,
    KV_DELETE: ProjectionBuilder._kv_delete,
    SESSION_CREATED: ProjectionBuilder._session_created,
    TURN_STARTED: ProjectionBuilder._turn_started,
    TURN_ENDED: ProjectionBuilder._turn_over,
    TURN_FAILED: ProjectionBuilder._turn_over,
    **{kind: ProjectionBuilder._effect_started for kind in EFFECT_STARTS},
    **{kind: ProjectionBuilder._effect_over for kind in EFFECT_TERMINALS},
    SESSION_ENDING: ProjectionBuilder._session_ending,
    SESSION_ENDED: ProjectionBuilder._session_ended,
    SESSION_FAILED: ProjectionBuilder._session_failed,
    FORKED_FROM: ProjectionBuilder._no_change,
    CANCEL_REQUESTED: ProjectionBuilder._no_change,
    EXTENSION_EVENT: ProjectionBuilder._no_change,
    WEBHOOK_DELIVERY_PENDING: ProjectionBuilder._webhook_pending,
    WEBHOOK_DELIVERY_ATTEMPTED: ProjectionBuilder._webhook_attempted,
    WEBHOOK_DELIVERY_DONE: ProjectionBuilder._webhook_over,
    WEBHOOK_DELIVERY_ABANDONED: ProjectionBuilder._webhook_over,
}
"""How each record kind changes a projection: one entry per kind of brain.protocol.records."""
_PUBLIC_KINDS = ALWAYS_SHOWN


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
