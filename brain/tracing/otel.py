"""OpenTelemetry spans (BRAIN_OTEL=1), exported by opentelemetry-sdk over OTLP/HTTP.

The `otel` extra brings the SDK; with BRAIN_OTEL unset, `tracer()` is None, callers do nothing
and opentelemetry is never imported. The exporter reads the standard OTEL_* variables
(OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_SERVICE_NAME, OTEL_BSP_SCHEDULE_DELAY, ...).

Every process (each web worker, each actor) makes its own provider on first use, and again
after a fork. No span is ever made current: each is parented explicitly, and a parent crosses
a process boundary as a W3C `traceparent` string (an optional field of `StartTurn`).
Attributes name sessions and sequences, never message text nor secrets.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from brain.protocol.records import (
    ACTIVATION_STARTED,
    ENVIRONMENT_OP_STARTED,
    MODEL_CALL_STARTED,
    TOOL_CALL_STARTED,
    TURN_ENDED,
    TURN_FAILED,
    TURN_STARTED,
)

_UNSET = object()
_tracer: Any = _UNSET
_pid = 0


def enabled() -> bool:
    """BRAIN_OTEL, read as brain/settings.py reads it."""
    return os.environ.get("BRAIN_OTEL", "").strip().lower() in ("1", "true", "yes", "on")


def tracer() -> Any:
    """This process's OpenTelemetry tracer, made on first use; None when BRAIN_OTEL is off."""
    global _tracer, _pid
    if _tracer is not _UNSET and _pid == os.getpid():
        return _tracer
    _pid = os.getpid()
    _tracer = None
    if enabled():
        try:
            _tracer = _make_tracer()
        except Exception as exc:  # tracing never takes Brain down: say so, export nothing
            print(f"brain: BRAIN_OTEL: {exc}; not exporting spans", file=sys.stderr,
                  flush=True)
    return _tracer


def _make_tracer() -> Any:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    resource = Resource.create({} if os.environ.get("OTEL_SERVICE_NAME")
                               else {"service.name": "brain"})
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    return provider.get_tracer("brain")


_last_extracted: tuple[str, Any] = ("", None)


def parent_context(parent: Any) -> Any:
    """The context to start a child in: of a span, of a `traceparent` string, or none.

    A string is parsed once for all the spans that follow in a row under it (a turn's
    commits before its turn span exists, a resumed turn's every span)."""
    global _last_extracted
    if parent is None:
        return None
    if isinstance(parent, str):
        if _last_extracted[0] == parent:
            return _last_extracted[1]
        from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

        context = TraceContextTextMapPropagator().extract({"traceparent": parent})
        _last_extracted = (parent, context)
        return context
    from opentelemetry import trace

    return trace.set_span_in_context(parent)


def start(name: str, parent: Any = None, attributes: dict[str, Any] | None = None,
          start_ns: int | None = None, kind: str | None = None) -> Any:
    """A started span (end it with `end`), or None when BRAIN_OTEL is off."""
    out = tracer()
    if out is None:
        return None
    try:
        span_kind = None
        if kind is not None:
            from opentelemetry.trace import SpanKind

            span_kind = getattr(SpanKind, kind)
        extra = {"kind": span_kind} if span_kind is not None else {}
        return out.start_span(name, context=parent_context(parent),
                              attributes=attributes or {}, start_time=start_ns, **extra)
    except Exception:
        return None


def end(span: Any, attributes: dict[str, Any] | None = None, error: str | None = None,
        end_ns: int | None = None) -> None:
    if span is None:
        return
    try:
        if attributes:
            span.set_attributes(attributes)
        if error is not None:
            from opentelemetry.trace import Status, StatusCode

            span.set_status(Status(StatusCode.ERROR, error))
        span.end(end_time=end_ns)
    except Exception:
        pass


def traceparent(span: Any) -> str | None:
    """The W3C traceparent of `span`, to carry it to another process."""
    if span is None:
        return None
    ctx = span.get_span_context()
    if not ctx.is_valid:
        return None
    return f"00-{ctx.trace_id:032x}-{ctx.span_id:016x}-{int(ctx.trace_flags):02x}"


KEPT_DIR = ("run", "otel")
"""Where a suspended turn's traceparent waits for the actor that resumes it, per session."""


def clear_kept_traceparents(data_path: Path) -> int:
    """Remove every kept traceparent: at start, before any actor runs. A restart fails every
    turn that was suspended (nothing resumes it), so what the last run kept has no reader.
    Returns how many were removed."""
    folder = data_path.joinpath(*KEPT_DIR)
    removed = 0
    try:
        names = os.listdir(folder)
    except OSError:
        return 0
    for name in names:
        try:
            (folder / name).unlink()
            removed += 1
        except OSError:
            pass
    return removed


class SessionSpans:
    """The spans of one session actor, following its committed records.

    A `*_started` record starts a span (turn, activation, model/tool call, environment op),
    the record that names it as `started` ends it; each commit is a span of its own under the
    innermost open one. A turn's span is a child of the traceparent its `StartTurn` carried.

    A suspended turn's spans end at its suspension (`brain.left_open`), and its span's
    traceparent waits in `run/otel/SESSION` for the actor that resumes it: the resumed
    activation and the commits up to the turn's end are its children, in the same trace.

    Commits are queued and made into spans by `flush`, which the actor calls once the step's
    client and guest have their answers, so tracing never stands between a commit and the
    answer it lets out (a text turn's spans cost ~0.25 ms). Every other method flushes first,
    so spans are made in the order of what they record.
    """

    def __init__(self, data_path: Path) -> None:
        self.kept = data_path.joinpath(*KEPT_DIR)
        self.open: dict[int, Any] = {}  # started seq -> span
        self.turn: Any = None
        self.activation: Any = None
        self._pending_parent: str | None = None  # the traceparent of the StartTurn in hand
        self.resumed: tuple[int, str] | None = None  # a suspended turn's (sequence, span)
        self._queued: list[tuple[str, list[dict[str, Any]], int, int]] = []

    @property
    def pending_parent(self) -> str | None:
        return self._pending_parent

    @pending_parent.setter
    def pending_parent(self, traceparent: str | None) -> None:
        self.flush()  # queued commits belong to the command before
        self._pending_parent = traceparent

    def committed(self, session_id: str, records: list[dict[str, Any]], began_ns: int,
                  ended_ns: int) -> None:
        """`records` are durable: their spans and the commit's own, made at the next flush."""
        self._queued.append((session_id, records, began_ns, ended_ns))

    def flush(self) -> None:
        """Make the spans of the commits queued so far."""
        queued, self._queued = self._queued, []
        for session_id, records, began_ns, ended_ns in queued:
            try:
                self._committed(session_id, records, began_ns, ended_ns)
            except Exception:
                pass  # tracing never takes Brain down (the records are durable all the same)

    def _committed(self, session_id: str, records: list[dict[str, Any]], began_ns: int,
                   ended_ns: int) -> None:
        within = None  # the innermost span open when the commit ends one: its parent
        for record in records:
            kind = record.get("kind", "")
            seq = record.get("seq")
            attrs = {"brain.session_id": session_id, "brain.sequence": seq,
                     "brain.record": kind}
            if kind.endswith("_started"):
                if kind == TURN_STARTED:
                    parent = self._pending_parent
                    self._pending_parent = None
                elif kind == ACTIVATION_STARTED:
                    parent = self.turn if self.turn is not None else self._pending_parent
                else:
                    parent = self.activation or self.turn
                name = _SPAN_NAMES.get(kind, kind.removesuffix("_started"))
                span = start(name, parent, attrs, began_ns)
                if span is None:
                    continue
                self.open[seq] = span
                if kind == TURN_STARTED:
                    self.turn = span
                elif kind == ACTIVATION_STARTED:
                    self.activation = span
            elif isinstance(record.get("started"), int) and record["started"] in self.open:
                if within is None:
                    within = self.activation or self.turn
                span = self.open.pop(record["started"])
                error = kind if kind.endswith(("_failed", "_cancelled", "_interrupted")) else None
                end(span, {"brain.end_sequence": seq, "brain.end_record": kind}, error,
                    ended_ns)
                if span is self.activation:
                    self.activation = None
                if span is self.turn:
                    self.turn = None
            elif kind in (TURN_ENDED, TURN_FAILED) and self.resumed is not None \
                    and record.get("started") == self.resumed[0]:
                self._forget(session_id)
        parent = within or self.activation or self.turn or \
            (self.resumed[1] if self.resumed is not None else None) or self._pending_parent
        commit = start("journal commit", parent,
                       {"brain.session_id": session_id,
                        "brain.first_sequence": records[0].get("seq"),
                        "brain.last_sequence": records[-1].get("seq"),
                        "brain.records": len(records)}, began_ns)
        end(commit, end_ns=ended_ns)

    def suspend(self, session_id: str, turn: int) -> None:
        """The turn is suspended: its spans end here, and its span's traceparent is kept."""
        self.flush()
        parent = traceparent(self.open.get(turn)) or \
            (self.resumed[1] if self.resumed is not None else None)
        if parent is not None:
            try:
                self.kept.mkdir(parents=True, exist_ok=True, mode=0o700)  # per run only
                (self.kept / session_id).write_text(f"{turn} {parent}\n")
            except OSError:
                pass  # tracing never takes Brain down: the resumed part is a trace of its own
        self.drop("suspended")

    def admitted_turn(self, session_id: str, turn: int, parent: str | None,
                      began_ns: int) -> None:
        """A turn a web worker admitted (its `turn_started` committed there): its span starts
        here, from the time of that record, under the submit's request span."""
        self.flush()
        span = start("turn", parent, {"brain.session_id": session_id, "brain.sequence": turn,
                                      "brain.record": TURN_STARTED,
                                      "brain.admitted_by": "web worker"}, began_ns)
        if span is not None:
            self.open[turn] = self.turn = span

    def resume(self, session_id: str, turn: int) -> None:
        """An open with `turn` suspended: its kept traceparent is the parent from now on."""
        self.flush()
        try:
            seq, parent = (self.kept / session_id).read_text().split()
        except (OSError, ValueError):
            return
        if int(seq) == turn:
            self.resumed = (turn, parent)

    def resumed_activation(self, session_id: str, turn: int, activation: int) -> None:
        """The suspended turn's activation runs again, in a fresh instance."""
        self.flush()
        parent = self.resumed[1] if self.resumed is not None and self.resumed[0] == turn \
            else None
        span = start("activation", parent, {"brain.session_id": session_id,
                                            "brain.sequence": activation,
                                            "brain.resumed": True})
        if span is not None:
            self.open[activation] = self.activation = span

    def no_suspended_turn(self, session_id: str) -> None:
        """An open that restores no suspended turn: a traceparent kept for this session belongs
        to a turn that ended without being resumed (cancelled, expired, or its session
        recovered), so it goes."""
        self.flush()
        if self.resumed is None:
            self._forget(session_id)

    def _forget(self, session_id: str) -> None:
        self.resumed = None
        try:
            (self.kept / session_id).unlink()
        except OSError:
            pass

    def drop(self, why: str) -> None:
        """The actor lets the session go (released, suspended, abandoned): end what is open."""
        self.flush()
        for span in self.open.values():
            end(span, {"brain.left_open": why})
        self.open.clear()
        self.turn = self.activation = None
        self.pending_parent = None
        self.resumed = None


_SPAN_NAMES = {
    TURN_STARTED: "turn",
    ACTIVATION_STARTED: "activation",
    MODEL_CALL_STARTED: "model call",
    TOOL_CALL_STARTED: "tool call",
    ENVIRONMENT_OP_STARTED: "environment op",
}
