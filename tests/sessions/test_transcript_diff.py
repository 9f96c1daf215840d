"""The journal's transcript deltas: appends store the tail, edits restart at the first change."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from brain.sessions.transcript_diff import (
    apply_delta,
    context_delta,
    first_difference,
    transcript_delta,
)


def msg(role: str, text: str) -> dict:
    return {"role": role, "content": [{"type": "text", "text": text}]}


def test_equal_transcripts_change_nothing() -> None:
    saved = [msg("user", "a"), msg("assistant", "b")]
    assert transcript_delta(saved, list(saved)) is None
    assert first_difference(saved, list(saved)) is None


def test_pure_append_stores_only_the_tail() -> None:
    saved = [msg("user", "a")]
    new = saved + [msg("assistant", "b"), msg("user", "c")]
    assert transcript_delta(saved, new) == {"start": 1, "items": new[1:], "length": 3}


def test_summary_restarts_at_first_changed_item() -> None:
    saved = [msg("user", "a"), msg("assistant", "b"), msg("user", "c")]
    new = [msg("user", "summary of a and b"), msg("user", "c")]
    assert transcript_delta(saved, new) == {"start": 0, "items": new, "length": 2}


def test_truncation_is_a_delta_with_no_items() -> None:
    saved = [msg("user", "a"), msg("assistant", "b")]
    assert transcript_delta(saved, saved[:1]) == {"start": 1, "items": [], "length": 1}


def test_context_delta_of_auxiliary_request() -> None:
    saved = [msg("user", "a"), msg("assistant", "b")]
    aux = [msg("user", "classify this: a")]
    delta = context_delta(saved, aux)
    assert apply_delta(saved, delta) == aux
    assert context_delta(saved, list(saved)) == {"start": 2, "items": []}


messages = st.lists(st.sampled_from([msg("user", t) for t in "abcd"]
                                    + [msg("assistant", t) for t in "xy"]), max_size=8)


@given(messages, messages)
def test_apply_inverts_delta(saved: list, new: list) -> None:
    delta = transcript_delta(saved, new)
    rebuilt = saved if delta is None else apply_delta(saved, delta)
    assert rebuilt == new
    if delta is not None:
        assert delta["length"] == len(new)
        assert saved[: delta["start"]] == new[: delta["start"]]
    assert apply_delta(saved, context_delta(saved, new)) == new
