"""The transcript's remembered JSON text: it must always encode to what encoding the messages
afresh gives (as JSON values), survive appends, be dropped by an edit of saved messages, and
come back from a checkpoint; a transcript JSON cannot hold still checkpoints."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

from brain.journal import JournalWriter, Projection, SessionReader, fold_all, load_checkpoint
from brain.journal.transcript_text import (
    MessagesText,
    TranscriptList,
    decode_messages,
    json_text,
    messages_text,
    portable,
)
from tests.journal.helpers import created, delta, message, open_writer

TRICKY = ["é", "日本語", "😀", '"', "\\", "\n", "\u2028", "]", ",", "\ud800"]


def conversation(n: int, tricky: list[str] = TRICKY) -> list[dict]:
    return [message(f"m{i} {tricky[i % len(tricky)]}", ("user", "assistant")[i % 2])
            for i in range(n)]


def test_remembered_text_is_reused_and_decodes_to_the_messages() -> None:
    transcript = decode_messages(json_text(conversation(5)))
    assert isinstance(transcript, TranscriptList) and transcript.encoded[0] == 5
    assert messages_text(transcript) == transcript.encoded[1] + "]"
    longer = transcript.copy()
    longer.extend(conversation(8)[5:])
    text = messages_text(longer)
    assert text.startswith(transcript.encoded[1] + ",")  # the saved part is not encoded again
    assert json.loads(text) == conversation(8)
    text.encode("utf-8")  # a lone surrogate goes out escaped: the text has a UTF-8 form


def test_a_plain_list_and_an_empty_transcript_encode_afresh() -> None:
    assert messages_text([]) == "[]"
    assert messages_text(TranscriptList()) == "[]"
    assert json.loads(messages_text(conversation(3))) == conversation(3)


def test_copies_other_than_copy_are_plain_lists() -> None:
    transcript = decode_messages(json_text(conversation(3)))
    assert type(transcript[:2]) is list and type(list(transcript)) is list
    restored = pickle.loads(pickle.dumps(transcript))
    assert type(restored) is list and restored == conversation(3)


def test_portable_sends_text_only_when_the_whole_text_is_known() -> None:
    transcript = decode_messages(json_text(conversation(4)))
    sent = portable(transcript)
    assert isinstance(sent, MessagesText) and json.loads(sent.text) == conversation(4)
    longer = transcript.copy()
    longer.append(message("new"))
    assert portable(longer) is longer  # the new message has no text yet
    assert portable(conversation(2)) == conversation(2)


def test_fold_keeps_the_text_over_appends_and_drops_it_on_an_edit() -> None:
    base = Projection.empty()
    records = [
        {"seq": 1, "kind": "session_created", "at": 1, "config": {}},
        {"seq": 2, "kind": "transcript_changed", "at": 1, **delta(0, conversation(4))},
    ]
    projection = fold_all(base, records)
    transcript = projection.transcript
    transcript.remember(messages_text(transcript))  # as a checkpoint write does
    appended = fold_all(projection, [
        {"seq": 3, "kind": "transcript_changed", "at": 1, **delta(4, [message("five")])}])
    assert appended.transcript.encoded == transcript.encoded
    assert json.loads(messages_text(appended.transcript)) == conversation(4) + [message("five")]
    edited = fold_all(appended, [
        {"seq": 4, "kind": "transcript_changed", "at": 1, **delta(1, [message("summary")])}])
    assert edited.transcript.encoded == (0, "")
    assert json.loads(messages_text(edited.transcript)) == conversation(1) + [message("summary")]
    assert transcript.encoded[0] == 4  # folding never changed the earlier projection's list


def write_session(session_dir: Path, messages: list) -> Projection:
    writer = open_writer(session_dir)
    records = writer.append([created(seeded=0), delta(0, messages)])
    projection = fold_all(Projection.empty(), records)
    writer.write_checkpoint(projection)
    writer.close()
    return projection


def test_checkpoint_keeps_the_transcript_as_json_text(tmp_path: Path) -> None:
    expected = write_session(tmp_path, conversation(30, TRICKY[:-1]))  # the journal's CBOR
    # holds no lone surrogate
    cp, why = load_checkpoint(tmp_path / "checkpoint")
    assert cp is not None, why
    assert cp.projection == expected
    transcript = cp.projection.transcript
    assert isinstance(transcript, TranscriptList) and transcript.encoded[0] == 30
    assert (tmp_path / "checkpoint").read_bytes().find(b"\"m0 \xc3\xa9") > 0  # JSON text inside
    writer = JournalWriter.open(tmp_path / "journal", project=True)
    try:
        assert writer.opened is not None
        assert writer.opened.transcript.encoded == transcript.encoded
    finally:
        writer.close()


def test_a_transcript_json_cannot_hold_is_checkpointed_as_it_is(tmp_path: Path) -> None:
    odd = [message("fine"), {"role": "user", "content": [{"type": "blob", "data": b"\x00"}]}]
    expected = write_session(tmp_path, odd)
    cp, why = load_checkpoint(tmp_path / "checkpoint")
    assert cp is not None, why
    assert cp.projection == expected and cp.projection.transcript[1]["content"][0]["data"] == b"\0"
    assert SessionReader(tmp_path).transcript()["messages"] == odd
