"""A writer process for the crash test: opens (recovering and checkpointing, as the session actor
does), then appends batches forever, printing each acknowledged last sequence after `append`
returns (that is, after its fdatasync). The parent SIGKILLs it at a random moment."""

from __future__ import annotations

import random
import sys
from pathlib import Path

from brain.journal import JournalWriter, SessionReader


def blob(seq: int, size: int) -> str:
    unit = f"<{seq}>"
    return (unit * (size // len(unit) + 1))[:size]


def batch_for(first: int, rng: random.Random) -> list[dict]:
    count = rng.randint(1, 16)
    records = []
    for i in range(count):
        size = rng.randint(4_000, 64_000) if rng.random() < 0.03 else rng.randint(0, 300)
        value = {"first": first, "n": count, "i": i, "size": size, "blob": blob(first + i, size)}
        records.append({"kind": "kv_put", "key": f"k{(first + i) % 7}", "value": value})
    return records


def main() -> None:
    journal_dir, seed, segment_bytes = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    rng = random.Random(seed)
    writer = JournalWriter.open(journal_dir, segment_bytes=segment_bytes)
    writer.write_checkpoint(SessionReader(Path(journal_dir).parent).projection())
    out = sys.stdout
    out.write(f"open {writer.last_seq}\n")
    out.flush()
    while True:
        writer.append(batch_for(writer.last_seq + 1, rng))
        out.write(f"{writer.last_seq}\n")
        out.flush()


if __name__ == "__main__":
    main()
