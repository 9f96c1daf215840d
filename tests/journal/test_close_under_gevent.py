"""A writer closed in a gevent worker releases its lock at once.

Web workers run under gevent's monkey patches and admit turns in gevent's thread pool while the
disk is slow to sync (brain/web/disk_wait.py). gevent's `os.close` defers the close of anything
but a regular file to the calling thread's event loop, which a pool thread that has a hub never
runs again: the journal directory's flock then stayed held by the web worker, and the session
actor handed the admitted turn could not open the journal (brain/fds.py). Each case runs in a
fresh interpreter, since monkey patches cannot be undone.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

PATCHED_POOL = """
from gevent import monkey
monkey.patch_all()

import os
import sys

import gevent

journal_root = sys.argv[1]


def open_journal_fds():
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            count += os.readlink(f"/proc/self/fd/{fd}").startswith(journal_root)
        except OSError:
            pass  # the descriptor listdir itself used
    return count


def in_pool_thread_with_a_hub(fn, *args):
    def run():
        gevent.get_hub()  # as a pool thread that ever waited on gevent has one
        return fn(*args)
    return gevent.get_hub().threadpool.apply(run)
"""


def run_patched(tmp_path: Path, body: str) -> str:
    code = textwrap.dedent(PATCHED_POOL) + textwrap.dedent(body)
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_gevent_defers_the_close_of_a_directory_in_a_pool_thread(tmp_path: Path) -> None:
    """The hazard itself, so this test fails if a gevent release stops having it (and the
    workaround could then go): a directory closed with `os.close` there stays open."""
    out = run_patched(tmp_path, """
        def open_and_close():
            os.close(os.open(journal_root, os.O_RDONLY | os.O_DIRECTORY))

        in_pool_thread_with_a_hub(open_and_close)
        print(open_journal_fds())
    """)
    assert out.split() == ["1"]


def test_a_writer_closed_in_a_pool_thread_releases_its_lock(tmp_path: Path) -> None:
    out = run_patched(tmp_path, """
        from brain.journal import JournalLocked, JournalWriter

        def admit(n):
            writer = JournalWriter.open(f"{journal_root}/s{n}/journal", project=True)
            try:
                writer.append([{"kind": "turn_started", "data": {"input": "hi"}}])
            finally:
                writer.close()

        for n in range(20):
            in_pool_thread_with_a_hub(admit, n)
        print("open", open_journal_fds())
        for n in range(20):  # as the session actor handed the turn would
            try:
                JournalWriter.open(f"{journal_root}/s{n}/journal").close()
            except JournalLocked:
                print("locked", n)
    """)
    assert out.split() == ["open", "0"]


def test_brain_closes_no_descriptor_with_os_close() -> None:
    """Any module may one day run in a web worker's pool thread: none uses `os.close`."""
    package = Path(__file__).resolve().parents[2] / "brain"
    users = [str(path.relative_to(package)) for path in sorted(package.rglob("*.py"))
             if "os.close(" in path.read_text(encoding="utf-8")]
    assert users == []
