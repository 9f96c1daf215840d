"""A writer for the concurrent-reader test: appends batches until the deadline, then exits."""

from __future__ import annotations

import random
import sys
import time

from brain.journal import JournalWriter


def main() -> None:
    journal_dir, seconds = sys.argv[1], float(sys.argv[2])
    rng = random.Random(7)
    writer = JournalWriter.open(journal_dir, segment_bytes=64 << 10)
    writer.append([{"kind": "session_created", "config": {}}])
    print("ready", flush=True)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        first, count = writer.last_seq + 1, rng.randint(1, 8)
        batch = []
        for i in range(count):
            data = {"first": first, "n": count, "i": i, "pad": "p" * rng.choice([0, 50, 9000])}
            batch.append({"kind": "extension_event", "name": "tick", "data": data})
            batch.append({"kind": "kv_put", "key": "last", "value": {"n": count, "i": i}})
        writer.append(batch)
    writer.close()
    print("done", flush=True)


if __name__ == "__main__":
    main()
