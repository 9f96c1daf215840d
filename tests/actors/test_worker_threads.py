"""WorkerThreads: work runs at once, each piece in its own thread, idle threads are reused."""

from __future__ import annotations

import threading
import time

from brain.actors.worker_threads import WorkerThreads

WAIT_SECS = 5.0


def test_sequential_work_reuses_one_thread_and_names_it_while_it_runs() -> None:
    threads = WorkerThreads("test", linger_secs=5.0)
    seen: list[tuple[int, str]] = []
    for n in range(20):
        done = threading.Event()

        def work(n: int = n, done: threading.Event = done) -> None:
            me = threading.current_thread()
            seen.append((me.ident or 0, me.name))
            done.set()

        threads.submit(work, name=f"job-{n}")
        assert done.wait(WAIT_SECS)
        time.sleep(0.005)  # let the thread go idle before the next submit
    assert threads.started == 1
    assert [name for _, name in seen] == [f"job-{n}" for n in range(20)]
    assert len({ident for ident, _ in seen}) == 1


def test_work_that_blocks_never_holds_up_other_work() -> None:
    threads = WorkerThreads("test", linger_secs=5.0)
    release = threading.Event()
    started = threading.Barrier(5, timeout=WAIT_SECS)

    def blocked() -> None:
        started.wait()
        release.wait(WAIT_SECS)

    for n in range(4):
        threads.submit(blocked, name=f"blocked-{n}")
    started.wait()  # four pieces run at once: one thread each
    quick = threading.Event()
    threads.submit(quick.set, name="quick")
    assert quick.wait(WAIT_SECS)
    release.set()
    assert threads.started == 5


def test_an_idle_thread_exits_after_its_linger_and_work_still_runs() -> None:
    threads = WorkerThreads("linger-test", linger_secs=0.05)
    first = threading.Event()
    threads.submit(first.set, name="first")
    assert first.wait(WAIT_SECS)
    deadline = time.monotonic() + WAIT_SECS
    while any(t.name == "linger-test-idle" for t in threading.enumerate()):
        assert time.monotonic() < deadline, "the idle thread never left"
        time.sleep(0.01)
    second = threading.Event()
    threads.submit(second.set, name="second")
    assert second.wait(WAIT_SECS)
    assert threads.started == 2
