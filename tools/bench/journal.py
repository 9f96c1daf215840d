"""Journal benchmark: prints ratios against baselines measured in the same run, on the same disk.

    python -m tools.bench.journal [--dir DIR] [--records 100000] [--appends 3000]

1. single-record appends (one fdatasync each) vs raw write+fdatasync of same-size buffers
   into a file in the same directory (target >= 0.8), and the CPU one such commit costs;
2. batched commits of 16 records vs raw 16-buffer writes with one fdatasync (target >= 0.8);
3. open of a session of N records (writer open + projection, as the session actor does) with
   a fresh checkpoint vs a full replay of the journal (target <= 0.05), and that open with its
   CRC pass over the history the checkpoint covers vs the same open with the pass skipped
   (alternated in one run; target <= 2);
4. a 1,000-event page read by a fresh SessionReader, as a web worker does (target <= 20 ms).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import brain.journal.opening as opening_module
from brain.journal import JournalWriter, SessionReader
from brain.journal.frames import encode_batch, encode_frame, encode_record, record_encoder
from brain.protocol.records import (
    ACTIVATION_ENDED,
    ACTIVATION_STARTED,
    KV_PUT,
    MODEL_CALL_ENDED,
    MODEL_CALL_STARTED,
    SESSION_CREATED,
    TOOL_CALL_ENDED,
    TOOL_CALL_STARTED,
    TRANSCRIPT_CHANGED,
    TURN_ENDED,
    TURN_STARTED,
)


def record_of_size(size: int) -> dict[str, Any]:
    return {"kind": KV_PUT, "key": "bench", "value": "x" * size}


def frame_size(record: dict[str, Any]) -> int:
    full = {"seq": 123456, "kind": record["kind"], "at": 1796217600000, **record}
    return len(encode_frame(1, encode_record(full), True))


def raw_rate(directory: Path, buffers: int, per_sync: int, size: int) -> float:
    """Buffers/s for plain appends of `size` bytes, `per_sync` buffers per write+fdatasync."""
    path = directory / "raw-baseline.bin"
    chunk = os.urandom(size * per_sync)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_TRUNC, 0o600)
    try:
        start = time.perf_counter()
        for _ in range(buffers // per_sync):
            os.write(fd, chunk)
            os.fdatasync(fd)
        elapsed = time.perf_counter() - start
    finally:
        os.close(fd)
        path.unlink()
    return (buffers // per_sync * per_sync) / elapsed


def journal_rate(directory: Path, records: int, per_batch: int, payload: int) -> float:
    session = directory / "append-session"
    writer = JournalWriter.open(session / "journal")
    batch = [record_of_size(payload)] * per_batch
    try:
        start = time.perf_counter()
        for _ in range(records // per_batch):
            writer.append(batch)
        elapsed = time.perf_counter() - start
    finally:
        writer.close()
        shutil.rmtree(session)
    return (records // per_batch * per_batch) / elapsed


def commit_cpu(directory: Path, commits: int, payload: int) -> tuple[float, float]:
    """(CPU seconds of one journal commit of one record, of one raw write+fdatasync of the
    same frame): this process's user + system time, which a commit's kernel work is charged
    to, over `commits` commits each. A turn's commits cost at least this much CPU."""
    size = frame_size(record_of_size(payload))
    before = time.process_time()
    raw_rate(directory, commits, 1, size)
    raw = (time.process_time() - before) / commits
    before = time.process_time()
    journal_rate(directory, commits, 1, payload)
    return (time.process_time() - before) / commits, raw


def best_ratio(
    directory: Path, records: int, per: int, payload: int, rounds: int
) -> tuple[float, float, float]:
    """Alternate baseline and journal runs so disk drift hits both; the median of the
    per-round ratios (each round's two runs are adjacent in time)."""
    size = frame_size(record_of_size(payload))
    raw, journal, ratios = [], [], []
    for _ in range(rounds):
        raw.append(raw_rate(directory, records, per, size))
        journal.append(journal_rate(directory, records, per, payload))
        ratios.append(journal[-1] / raw[-1])
    return statistics.median(journal), statistics.median(raw), statistics.median(ratios)


def encode_costs(payload: int, per_batch: int, rounds: int = 2000) -> tuple[float, float]:
    """Seconds per batch of `per_batch` records for the CBOR encoding alone (the floor of any
    cbor2-framed journal) and for `encode_batch` (encoding plus CRCs and headers), both with
    the reusable encoder the writer uses."""
    at = 1796217600000
    records = [{"seq": i + 1, "at": at, **record_of_size(payload)} for i in range(per_batch)]
    dumps = record_encoder()
    start = time.perf_counter()
    for _ in range(rounds):
        for record in records:
            dumps(record)
    floor = (time.perf_counter() - start) / rounds
    start = time.perf_counter()
    for _ in range(rounds):
        encode_batch(records, dumps)
    framing = (time.perf_counter() - start) / rounds
    return floor, framing


def turn_records(turn: int, length: int) -> list[list[dict[str, Any]]]:
    """One realistic turn as the session actor commits it: 12 records in 9 batches."""
    user = {"role": "user", "content": [{"type": "text", "text": f"question {turn} " * 4}]}
    reply = {"role": "assistant", "content": [{"type": "text", "text": f"answer {turn} " * 8}]}
    call = {
        "role": "assistant",
        "content": [
            {"type": "tool_call", "id": f"c{turn}", "name": "echo", "input": {"text": "hi"}}
        ],
    }
    result = {
        "role": "tool",
        "content": [
            {"type": "tool_result", "tool_call_id": f"c{turn}", "content": "hi", "is_error": False}
        ],
    }
    usage = {"input_tokens": 1200, "output_tokens": 80}
    return [
        [{"kind": TURN_STARTED, "input": f"question {turn}", "mode": "send"},
         {"kind": ACTIVATION_STARTED, "agentloop": "default", "turn": 0}],
        [{"kind": MODEL_CALL_STARTED, "model": "scripted", "message_count": length + 1,
          "context": {"through_sequence": 0, "delta": {"start": length, "items": [user]}},
          "tools": ["echo"], "options": {}}],
        [{"kind": MODEL_CALL_ENDED, "started": 0, "outcome": "ok",
          "result": {"message": call, "stop_reason": "tool_use", "usage": usage}}],
        [{"kind": TOOL_CALL_STARTED, "tool": "echo",
          "invocation": {"id": f"c{turn}", "input": {"text": "hi"}}, "deadline": 300}],
        [{"kind": TOOL_CALL_ENDED, "started": 0, "outcome": "ok",
          "result": {"content": "hi", "is_error": False}}],
        [{"kind": MODEL_CALL_STARTED, "model": "scripted", "message_count": length + 3,
          "context": {"through_sequence": 0,
                      "delta": {"start": length, "items": [user, call, result]}},
          "tools": ["echo"], "options": {}}],
        [{"kind": MODEL_CALL_ENDED, "started": 0, "outcome": "ok",
          "result": {"message": reply, "stop_reason": "end_turn", "usage": usage}}],
        [{"kind": TRANSCRIPT_CHANGED, "start": length, "items": [user, call, result, reply],
          "length": length + 4},
         {"kind": KV_PUT, "key": "turns", "value": turn}],
        [{"kind": ACTIVATION_ENDED, "started": 0},
         {"kind": TURN_ENDED, "started": 0, "output": f"answer {turn}"}],
    ]  # fmt: skip


SUMMARY_EVERY = 50  # turns between transcript summaries in the open test


def build_session(session: Path, records: int) -> int:
    """A session of about `records` records, written with few fdatasyncs (setup, not timed)."""
    writer = JournalWriter.open(session / "journal", checkpoint_path=None)
    writer.append(
        [
            {
                "kind": SESSION_CREATED,
                "seeded": 0,
                "config": {
                    "agentloop": {"name": "default"},
                    "model": {"name": "scripted"},
                    "tools": [{"name": "echo"}],
                    "environments": [],
                },
            }
        ]
    )
    turn = length = 0
    while writer.last_seq < records:
        # One commit per turn keeps the setup quick; the session actor commits more often,
        # which only makes batches smaller (and reads cheaper).
        writer.append([record for batch in turn_records(turn, length) for record in batch])
        length += 4
        turn += 1
        if turn % SUMMARY_EVERY == 0:
            # Agentloops summarize: no model context holds an unbounded transcript.
            summary = {"role": "assistant", "content": [{"type": "text", "text": "summary"}]}
            writer.append(
                [{"kind": TRANSCRIPT_CHANGED, "start": 0, "items": [summary], "length": 1}]
            )
            length = 1
    last = writer.last_seq
    writer.close()
    return last


def open_session(session: Path, checkpoint: bool) -> float:
    start = time.perf_counter()
    if checkpoint:
        writer = JournalWriter.open(session / "journal")
        projection = SessionReader(session).projection()
    else:
        writer = JournalWriter.open(session / "journal", checkpoint_path=None)
        projection = SessionReader(session, checkpoint_path=session / "absent").projection()
    elapsed = time.perf_counter() - start
    assert projection.last_seq == writer.last_seq
    writer.close()
    return elapsed


@contextmanager
def history_pass_skipped() -> Iterator[None]:
    """The open without its check of the history its checkpoint covers: the CRC pass
    replaced by a no-op, so the checkpoint's checksums are trusted as its position is."""
    saved = opening_module.history_mismatch
    opening_module.history_mismatch = lambda *args: None
    try:
        yield
    finally:
        opening_module.history_mismatch = saved


def open_with_and_without_pass(session: Path, rounds: int) -> tuple[float, float, float]:
    """(best open with the pass, best open without it, median of per-round ratios), the two
    alternated so that load and cache drift hit both."""
    with_pass, without, ratios = [], [], []
    for _ in range(rounds):
        with history_pass_skipped():
            without.append(open_session(session, checkpoint=True))
        with_pass.append(open_session(session, checkpoint=True))
        ratios.append(with_pass[-1] / without[-1])
    return min(with_pass), min(without), statistics.median(ratios)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, default=None, help="directory on the disk to test")
    parser.add_argument("--records", type=int, default=100_000, help="records in the open test")
    parser.add_argument("--appends", type=int, default=1000, help="appends per timed run")
    parser.add_argument("--rounds", type=int, default=7, help="interleaved rounds per ratio")
    args = parser.parse_args(argv)
    base = Path(tempfile.mkdtemp(prefix="brain-bench-journal-", dir=args.dir))
    try:
        print(f"disk directory: {base}")
        payload = 140
        size = frame_size(record_of_size(payload))
        j, r, ratio = best_ratio(base, args.appends, 1, payload, args.rounds)
        print(
            f"1. append, 1 record/fdatasync ({size}-byte frames): journal {j:,.0f} rec/s, "
            f"raw {r:,.0f} rec/s, ratio {ratio:.2f} (target >= 0.8)"
        )
        journal_cpu, raw_cpu = commit_cpu(base, args.appends, payload)
        print(f"   CPU per commit (user + system): journal {journal_cpu * 1e6:.0f} us, raw "
              f"write+fdatasync {raw_cpu * 1e6:.0f} us")
        j, r, ratio = best_ratio(base, args.appends * 16, 16, payload, args.rounds)
        print(
            f"2. batched commits of 16: journal {j:,.0f} rec/s, raw {r:,.0f} rec/s, "
            f"ratio {ratio:.2f} (target >= 0.8)"
        )
        floor, framing = encode_costs(payload, 16)
        raw_batch = 16 / r
        print(
            f"   per batch of 16: raw write+fdatasync {raw_batch * 1e6:.0f} us, journal "
            f"{16 / j * 1e6:.0f} us; CBOR encoding of the 16 records alone {floor * 1e6:.0f} us, "
            f"encode_batch (dumps + CRCs + headers) {framing * 1e6:.0f} us; the ratio any "
            f"cbor2-framed journal could reach here is {raw_batch / (raw_batch + floor):.2f}"
        )

        session = base / "sessions" / "big"
        last = build_session(session, args.records)
        replay = min(open_session(session, checkpoint=False) for _ in range(3))
        JournalWriter.open(session / "journal").close()  # writes the fresh checkpoint
        fresh, unverified, pass_ratio = open_with_and_without_pass(session, 2 * args.rounds)
        checkpoint_mb = (session / "checkpoint").stat().st_size / 1e6
        journal_mb = sum(p.stat().st_size for p in (session / "journal").iterdir()) / 1e6
        print(
            f"3. open of a {last:,}-record session (12-record turns, transcript summarized "
            f"every {SUMMARY_EVERY} turns): fresh checkpoint {fresh * 1000:.1f} ms "
            f"({checkpoint_mb:.1f} MB checkpoint), full replay {replay * 1000:.1f} ms, "
            f"ratio {fresh / replay:.3f} (target <= 0.05)"
        )
        print(
            f"   that open verifies the {journal_mb:.1f} MB of history the checkpoint covers "
            f"with one CRC pass: {fresh * 1000:.1f} ms, against {unverified * 1000:.1f} ms "
            f"with the pass skipped (the open before it); ratio {pass_ratio:.2f} "
            f"(median of {2 * args.rounds} alternated rounds; target <= 2)"
        )

        samples = []
        page_sizes = []
        step = max(1, last // 40)
        for after in range(0, last - 2000, step):
            start = time.perf_counter()
            page = SessionReader(session).events_page(after, 1000)
            samples.append(time.perf_counter() - start)
            page_sizes.append(len(page["events"]))
        samples.sort()
        print(
            f"4. 1,000-event page read (fresh SessionReader, {len(samples)} cursors across the "
            f"session, {min(page_sizes)}-{max(page_sizes)} events/page): "
            f"p50 {statistics.median(samples) * 1000:.1f} ms, "
            f"p90 {samples[int(len(samples) * 0.9)] * 1000:.1f} ms, "
            f"max {samples[-1] * 1000:.1f} ms (target <= 20 ms)"
        )
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
