"""The embedded default model: deterministic, stateless, no network.

It lets Brain run with no configuration and lets tests drive every path of the model executor
(tool calls, slow streams, failures, cancellation) without a server. The answer depends on the
request alone, never on earlier calls, so a restart or a replay of the same request changes
nothing. Script format: docs/models.md, "The scripted provider".
"""

from __future__ import annotations

import copy
import json
import logging
import re
import threading
from pathlib import Path
from typing import Any

from brain.effects import FAILURES
from brain.models.base import (
    ModelCallError,
    OnDelta,
    Provider,
    ProviderSpecError,
    Request,
    Result,
    check_cancel,
    result,
    safe_delta,
    text_of,
    tool_result_text,
)

log = logging.getLogger("brain.models")

STEP_KEYS = frozenset(
    {
        "when_last_user_matches",
        "text",
        "tool_calls",
        "stream_chunks",
        "chunk_delay_ms",
        "delay_ms",
        "fail",
        "stop_reason",
    }
)


class ScriptedProvider(Provider):
    """Answers from a script of steps, or echoes the last user text when there is none."""

    def __init__(self, name: str, spec: dict[str, Any]) -> None:
        super().__init__(name, spec)
        self.steps = [_check_step(name, i, step) for i, step in enumerate(_load_script(name, spec))]
        self.never_waits = not any(step.get("delay_ms") or step.get("chunk_delay_ms")
                                   for step in self.steps)

    def call(self, request: Request, on_delta: OnDelta, cancel: threading.Event) -> Result:
        check_cancel(cancel)
        on_delta = safe_delta(on_delta, log)
        messages = list(request.get("messages") or [])
        step = self.choose_step(messages) or {}
        _wait(cancel, step.get("delay_ms", 0))

        chunks = _chunks(step)
        tool_calls = step.get("tool_calls") or []
        if chunks is None:
            has_text = "text" in step or "fail" in step or tool_calls
            text = step.get("text", "") if has_text else _default_answer(messages)
            chunks = [text] if text else []
        delay_ms = step.get("chunk_delay_ms", 0)
        for i, piece in enumerate(chunks):
            if i:
                _wait(cancel, delay_ms)
            check_cancel(cancel)
            on_delta(piece)

        fail = step.get("fail")
        if fail is not None:
            raise ModelCallError(
                fail["outcome"], fail.get("message", "scripted failure"), fail.get("status")
            )

        content: list[dict[str, Any]] = []
        text = "".join(chunks)
        if text:
            content.append({"type": "text", "text": text})
        for i, call in enumerate(tool_calls):
            content.append(
                {
                    "type": "tool_call",
                    "id": f"call_{len(messages)}_{i}",
                    "name": call["name"],
                    "input": copy.deepcopy(call.get("input", {})),  # callers may mutate it
                }
            )
        stop_reason = step.get("stop_reason") or ("tool_use" if tool_calls else "end_turn")
        usage = {"input_tokens": _request_words(messages), "output_tokens": len(text.split())}
        return result(content, stop_reason, usage)

    def choose_step(self, messages: list[dict[str, Any]]) -> dict[str, Any] | None:
        """Pick the step for this request (docs/models.md).

        The sequence is the steps whose `when_last_user_matches` matches the last user text, or,
        when none matches, the steps with no pattern. The position in it is the number of
        assistant messages after the last user message, clamped to the last step.
        """
        if not self.steps:
            return None
        last_user = _last_index(messages, "user")
        user_text = text_of(messages[last_user]) if last_user is not None else ""
        matched = [
            s
            for s in self.steps
            if "when_last_user_matches" in s and s["_pattern"].search(user_text)
        ]
        sequence = matched or [s for s in self.steps if "when_last_user_matches" not in s]
        if not sequence:
            return None
        after = messages[last_user + 1 :] if last_user is not None else messages
        position = sum(1 for m in after if m.get("role") == "assistant")
        return sequence[min(position, len(sequence) - 1)]


def _load_script(name: str, spec: dict[str, Any]) -> list[Any]:
    if "script" in spec and "script_file" in spec:
        raise ProviderSpecError(f"models.{name}: give script or script_file, not both")
    if "script_file" in spec:
        path = Path(str(spec["script_file"]))
        try:
            data = json.loads(path.read_text("utf-8"))
        except (OSError, ValueError) as exc:
            raise ProviderSpecError(
                f"models.{name}: cannot read script_file {path}: {exc}"
            ) from None
        if isinstance(data, dict):
            data = data.get("steps")
    else:
        data = spec.get("script", [])
    if not isinstance(data, list):
        raise ProviderSpecError(f"models.{name}: the script must be a list of steps")
    return data


def _check_step(name: str, index: int, step: Any) -> dict[str, Any]:
    """Validate one step at start-up, so a typo fails `brain serve`, not a turn."""
    where = f"models.{name}.script[{index}]"
    if not isinstance(step, dict):
        raise ProviderSpecError(f"{where}: a step must be a table")
    unknown = set(step) - STEP_KEYS
    if unknown:
        raise ProviderSpecError(f"{where}: unknown keys {sorted(unknown)}")
    step = dict(step)
    if "when_last_user_matches" in step:
        try:
            step["_pattern"] = re.compile(str(step["when_last_user_matches"]))
        except re.error as exc:
            raise ProviderSpecError(f"{where}: bad when_last_user_matches: {exc}") from None
    if "text" in step and not isinstance(step["text"], str):
        raise ProviderSpecError(f"{where}: text must be a string")
    calls = step.get("tool_calls", [])
    if not isinstance(calls, list) or not all(
        isinstance(c, dict) and isinstance(c.get("name"), str) for c in calls
    ):
        raise ProviderSpecError(f"{where}: tool_calls must be a list of {{name, input}}")
    chunks = step.get("stream_chunks")
    if chunks is not None and not (
        (isinstance(chunks, int) and not isinstance(chunks, bool) and chunks > 0)
        or (isinstance(chunks, list) and all(isinstance(c, str) for c in chunks))
    ):
        raise ProviderSpecError(f"{where}: stream_chunks must be a positive count or strings")
    for key in ("delay_ms", "chunk_delay_ms"):
        value = step.get(key, 0)
        if not isinstance(value, int | float) or isinstance(value, bool) or value < 0:
            raise ProviderSpecError(f"{where}: {key} must be a number >= 0")
    fail = step.get("fail")
    if fail is not None and not (isinstance(fail, dict) and fail.get("outcome") in FAILURES):
        raise ProviderSpecError(f"{where}: fail needs an outcome in {[str(o) for o in FAILURES]}")
    if fail is not None and not isinstance(fail.get("status", 0), int | None):
        raise ProviderSpecError(f"{where}: fail.status must be an integer")
    return step


def _chunks(step: dict[str, Any]) -> list[str] | None:
    """The text pieces to stream: explicit strings, `text` cut into N near-equal parts, or None
    when the step does not say."""
    chunks = step.get("stream_chunks")
    if chunks is None:
        return None
    if isinstance(chunks, list):
        return [str(c) for c in chunks]
    text = step.get("text", "")
    if not text:
        return []
    size = -(-len(text) // chunks)
    return [text[i : i + size] for i in range(0, len(text), size)]


def _default_answer(messages: list[dict[str, Any]]) -> str:
    """Echo the last user text; after tool results, summarise them instead."""
    if messages and messages[-1].get("role") == "tool":
        parts = [
            tool_result_text(block.get("content"))
            for block in messages[-1].get("content") or []
            if isinstance(block, dict) and block.get("type") == "tool_result"
        ]
        return "tool results: " + "; ".join(parts)
    last_user = _last_index(messages, "user")
    return "echo: " + (text_of(messages[last_user]) if last_user is not None else "")


def _last_index(messages: list[dict[str, Any]], role: str) -> int | None:
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].get("role") == role:
            return i
    return None


WORD_COUNTS_KEPT = 65_536
MESSAGES_COUNTED_KEPT = 16_384  # message objects held for their counts (a few MiB at most)


def _request_words(messages: list[dict[str, Any]]) -> int:
    """The request's words (its `usage.input_tokens`). Every request repeats the conversation,
    so each message's count is remembered, by the message object (the model executor hands
    the same objects again while a session goes on) and by its text (a lookup hashes the text
    once; a split built a string per word): counting again at every call made a call's cost
    grow with the conversation. Messages are read-only, so an object's count stays right."""
    total = 0
    counts, by_object = _word_counts, _word_counts_by_object
    for message in messages:
        known = by_object.get(id(message))
        if known is not None and known[0] is message:
            total += known[1]
            continue
        text = text_of(message)
        words = counts.get(text)
        if words is None:
            words = len(text.split())
            if len(counts) >= WORD_COUNTS_KEPT:
                counts.clear()  # bounded; the next calls count again
            counts[text] = words
        if len(by_object) >= MESSAGES_COUNTED_KEPT:
            by_object.clear()
        by_object[id(message)] = (message, words)  # holding it keeps its id from being reused
        total += words
    return total


_word_counts: dict[str, int] = {}
_word_counts_by_object: dict[int, tuple[dict[str, Any], int]] = {}


def _wait(cancel: threading.Event, delay_ms: float) -> None:
    """Sleep, waking at once if the call is cancelled."""
    if delay_ms and cancel.wait(delay_ms / 1000):
        raise ModelCallError("cancelled", "model call cancelled")
