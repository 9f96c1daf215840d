"""The journal's record kinds, each declared once: its name, its fields, and whether clients see it.

A record on disk is `{seq, kind, at, ...fields}` (docs/journal.md). Every Python module of Brain
that writes, folds, filters, counts, traces or shows a record names its kind through the
constants here (`MODEL_CALL_STARTED`, ...), never by spelling the string, and reads the per-kind
facts (public or private, which effect, which stage) from `KINDS`. The constants are plain
`str` values, the very strings the journal holds, so the on-disk format is the names below.

What each kind declares (`RecordKind`):

- `fields`: `required` are written with every record of the kind, `optional` only with some;
  `seq`, `kind` and `at` are the envelope and never listed. The builders in
  brain.sessions.records write exactly these.
- `shown`: how clients see it. `Shown.AS_ITSELF` kinds are the public records: an Event of the
  same kind whose data is the record's fields. `Shown.NEVER` kinds stay in the journal.
  Two private kinds still reach clients in another shape: an `extension_event` is an Event named
  after its own `name` (`Shown.UNDER_ITS_NAME`), and a `transcript_changed` that replaces saved
  items is a `transcript_replaced` Event (`Shown.WHEN_REPLACING`); a pure append is not shown.
- `group`: the session, its content (transcript and kv), turns, activations, effects, or
  webhook deliveries (bookkeeping beside the session's history, never part of a turn's).
- `effect` and `stage`: for the records of an effect (the three an executor performs and the
  Agentloop's activation), which effect it belongs to and whether it starts it (`started`),
  answers it (`ended`, outcome `ok`) or fails it (`failed`, any other outcome).

The web console (brain/web/console/, JavaScript) keeps its own spellings of the kinds it
shows; they are these same strings.

This module imports nothing of Brain's: it is the bottom of the vocabulary.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Final

# --- the kinds ------------------------------------------------------------------------------

SESSION_CREATED: Final = "session_created"
FORKED_FROM: Final = "forked_from"
SESSION_ENDING: Final = "session_ending"
SESSION_ENDED: Final = "session_ended"
SESSION_FAILED: Final = "session_failed"

TRANSCRIPT_CHANGED: Final = "transcript_changed"
KV_PUT: Final = "kv_put"
KV_DELETE: Final = "kv_delete"
EXTENSION_EVENT: Final = "extension_event"

TURN_STARTED: Final = "turn_started"
TURN_ENDED: Final = "turn_ended"
TURN_FAILED: Final = "turn_failed"
CANCEL_REQUESTED: Final = "cancel_requested"

ACTIVATION_STARTED: Final = "activation_started"
ACTIVATION_ENDED: Final = "activation_ended"
ACTIVATION_FAILED: Final = "activation_failed"

MODEL_CALL_STARTED: Final = "model_call_started"
MODEL_CALL_ENDED: Final = "model_call_ended"
MODEL_CALL_FAILED: Final = "model_call_failed"
TOOL_CALL_STARTED: Final = "tool_call_started"
TOOL_CALL_ENDED: Final = "tool_call_ended"
TOOL_CALL_FAILED: Final = "tool_call_failed"
ENVIRONMENT_OP_STARTED: Final = "environment_op_started"
ENVIRONMENT_OP_ENDED: Final = "environment_op_ended"
ENVIRONMENT_OP_FAILED: Final = "environment_op_failed"

WEBHOOK_DELIVERY_PENDING: Final = "webhook_delivery_pending"
WEBHOOK_DELIVERY_ATTEMPTED: Final = "webhook_delivery_attempted"
WEBHOOK_DELIVERY_DONE: Final = "webhook_delivery_done"
WEBHOOK_DELIVERY_ABANDONED: Final = "webhook_delivery_abandoned"

TRANSCRIPT_REPLACED: Final = "transcript_replaced"
"""Not a record kind: the Event a `transcript_changed` that replaces saved items is shown as."""

# --- the effects ----------------------------------------------------------------------------

MODEL_CALL: Final = "model_call"
TOOL_CALL: Final = "tool_call"
ENVIRONMENT_OP: Final = "environment_op"
ACTIVATION: Final = "activation"

EFFECTS: Final = (MODEL_CALL, TOOL_CALL, ENVIRONMENT_OP)
"""The effects an executor performs; the Agentloop's activation is the fourth kind of effect."""

STARTED: Final = "started"
ENDED: Final = "ended"
FAILED: Final = "failed"


class Shown(enum.Enum):
    """How clients see a record of a kind (the module docstring says what each means)."""

    AS_ITSELF = "as_itself"
    NEVER = "never"
    UNDER_ITS_NAME = "under_its_name"
    WHEN_REPLACING = "when_replacing"


@dataclass(frozen=True)
class RecordKind:
    """One record kind: everything Brain decides per kind."""

    name: str
    group: str
    required: tuple[str, ...]
    optional: tuple[str, ...] = ()
    shown: Shown = Shown.NEVER
    effect: str | None = None
    stage: str | None = None

    @property
    def public(self) -> bool:
        """Shown to clients as an Event of this very kind."""
        return self.shown is Shown.AS_ITSELF

    @property
    def fields(self) -> frozenset[str]:
        return frozenset(self.required) | frozenset(self.optional)


def _effect_kinds(effect: str, names: tuple[str, str, str], started: tuple[str, ...], *,
                  outcome: bool, failed_extra: tuple[str, ...] = ()) -> tuple[RecordKind, ...]:
    """The three kinds of one effect, `names` being its `_started`, `_ended` and `_failed`.
    An executor's effect settles with an `outcome` (and, when it answered, a `result`); the
    activation's end carries neither."""
    group = "activation" if effect == ACTIVATION else "effect"
    settled = ("outcome",) if outcome else ()
    return (
        RecordKind(names[0], group, started, shown=Shown.AS_ITSELF, effect=effect,
                   stage=STARTED),
        RecordKind(names[1], group, ("started", "result", *settled) if outcome else ("started",),
                   shown=Shown.AS_ITSELF, effect=effect, stage=ENDED),
        RecordKind(names[2], group, ("started", "error", *settled, *failed_extra),
                   shown=Shown.AS_ITSELF, effect=effect, stage=FAILED),
    )


_DECLARED: tuple[RecordKind, ...] = (
    # the session
    RecordKind(SESSION_CREATED, "session", ("config", "seeded"), shown=Shown.AS_ITSELF),
    RecordKind(FORKED_FROM, "session", ("session_id", "sequence"), shown=Shown.AS_ITSELF),
    RecordKind(SESSION_ENDING, "session", (), shown=Shown.AS_ITSELF),
    RecordKind(SESSION_ENDED, "session", (), shown=Shown.AS_ITSELF),
    RecordKind(SESSION_FAILED, "session", ("error",), shown=Shown.AS_ITSELF),
    # transcript, kv and extension Events
    RecordKind(TRANSCRIPT_CHANGED, "content", ("start", "items", "length"),
               shown=Shown.WHEN_REPLACING),
    RecordKind(KV_PUT, "content", ("key", "value")),
    RecordKind(KV_DELETE, "content", ("key",)),
    RecordKind(EXTENSION_EVENT, "content", ("name", "data", "origin"),
               shown=Shown.UNDER_ITS_NAME),
    # turns
    RecordKind(TURN_STARTED, "turn", ("input", "mode"), shown=Shown.AS_ITSELF),
    RecordKind(TURN_ENDED, "turn", ("started", "output"), shown=Shown.AS_ITSELF),
    RecordKind(TURN_FAILED, "turn", ("started", "error"), shown=Shown.AS_ITSELF),
    RecordKind(CANCEL_REQUESTED, "turn", ("turn",), shown=Shown.AS_ITSELF),
    # the activation and the effects
    *_effect_kinds(ACTIVATION, (ACTIVATION_STARTED, ACTIVATION_ENDED, ACTIVATION_FAILED),
                   ("agentloop", "turn"), outcome=False),
    *_effect_kinds(MODEL_CALL, (MODEL_CALL_STARTED, MODEL_CALL_ENDED, MODEL_CALL_FAILED),
                   ("model", "message_count", "context", "tools", "options"), outcome=True),
    *_effect_kinds(TOOL_CALL, (TOOL_CALL_STARTED, TOOL_CALL_ENDED, TOOL_CALL_FAILED),
                   ("tool", "invocation", "deadline"), outcome=True, failed_extra=("result",)),
    *_effect_kinds(ENVIRONMENT_OP,
                   (ENVIRONMENT_OP_STARTED, ENVIRONMENT_OP_ENDED, ENVIRONMENT_OP_FAILED),
                   ("environment", "op", "request"), outcome=True),
    # webhook deliveries
    RecordKind(WEBHOOK_DELIVERY_PENDING, "webhook", ("id", "body")),
    RecordKind(WEBHOOK_DELIVERY_ATTEMPTED, "webhook",
               ("id", "attempt", "status", "error", "retry_in_ms")),
    RecordKind(WEBHOOK_DELIVERY_DONE, "webhook", ("id", "attempt", "status")),
    RecordKind(WEBHOOK_DELIVERY_ABANDONED, "webhook", ("id", "attempts", "reason")),
)

KINDS: Final[dict[str, RecordKind]] = {kind.name: kind for kind in _DECLARED}
"""Every record kind by name, in the order of docs/journal.md."""
assert len(KINDS) == len(_DECLARED), "a record kind is declared twice"

RECORD_NAMES: Final = frozenset(KINDS)
PUBLIC_RECORDS: Final = frozenset(name for name, kind in KINDS.items() if kind.public)
"""Shown to clients as Events of their own kind, with the record's fields as data."""
PRIVATE_RECORDS: Final = RECORD_NAMES - PUBLIC_RECORDS
"""Never shown as themselves (an extension Event and a replacing delta are shown otherwise)."""
ALWAYS_SHOWN: Final = frozenset(name for name, kind in KINDS.items()
                                if kind.shown in (Shown.AS_ITSELF, Shown.UNDER_ITS_NAME))
"""Every record of these kinds is an Event, under one name or another."""

EFFECT_STARTS: Final = frozenset(n for n, k in KINDS.items() if k.stage == STARTED)
EFFECT_TERMINALS: Final = frozenset(n for n, k in KINDS.items() if k.stage in (ENDED, FAILED))
"""Every `_ended` and `_failed` of an effect, the activation's included."""
TURN_ENDS: Final = frozenset({TURN_ENDED, TURN_FAILED})
ACTIVATION_ENDS: Final = frozenset({ACTIVATION_ENDED, ACTIVATION_FAILED})
WEBHOOK_RECORDS: Final = frozenset(n for n, k in KINDS.items() if k.group == "webhook")
"""The delivery records: bookkeeping beside the session's history, never part of a turn's."""


def started_kind(effect: str) -> str:
    """`tool_call_started` for `tool_call`, and so on."""
    return _BY_STAGE[effect, STARTED]


def ended_kind(effect: str) -> str:
    return _BY_STAGE[effect, ENDED]


def failed_kind(effect: str) -> str:
    return _BY_STAGE[effect, FAILED]


def effect_of(kind: str) -> str:
    """`tool_call` for `tool_call_started` (or its `_ended`, `_failed`), and so on."""
    effect = KINDS[kind].effect
    if effect is None:
        raise KeyError(f"{kind} is not an effect's record")
    return effect


_BY_STAGE: dict[tuple[str, str], str] = {
    (kind.effect, kind.stage): name for name, kind in KINDS.items()
    if kind.effect is not None and kind.stage is not None
}
