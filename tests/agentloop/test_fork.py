"""Activation in a process forked from one that already compiled and ran the module.

Brain's actors are forked processes (stack hazard 4: after fork, a compile in the child
hangs forever if the parent compiled with parallel compilation). The child must get its own
Engine and ticker, compile or deserialize, and run. A hang fails the test by timeout.
"""

from __future__ import annotations

import multiprocessing
import queue
import time
from pathlib import Path
from typing import Any

import pytest

from brain.agentloop import DEFAULT_AGENTLOOP, AgentloopError, AgentloopRuntime
from tests.agentloop.helpers import FakeBrain, assistant, compile_guest, payload, text
from tests.support.forking import FORK_WITH_THREADS

TIMEOUT_SECS = 60


def _child(results: Any, cache_dir: str | None, spin_path: str) -> None:
    try:
        runtime = AgentloopRuntime(cache_dir=cache_dir)
        brain = FakeBrain(replies=[assistant(text("from the child"))])
        result = runtime.activate(DEFAULT_AGENTLOOP, payload(), brain, time.monotonic() + 30)
        # The child's own epoch ticker must be running: a spinning guest still stops.
        try:
            runtime.activate(spin_path, {}, brain, time.monotonic() + 0.2)
            stopped = "not stopped"
        except AgentloopError as exc:
            stopped = exc.code
        results.put((result, stopped))
    except BaseException as exc:  # report, never hang the parent
        results.put(("error", repr(exc)))


# The parent's epoch ticker is running at the fork on purpose: that is the case under test. The
# child never touches the parent's Engine (current_engine() makes its own for a new pid).
@pytest.mark.filterwarnings(FORK_WITH_THREADS)
@pytest.mark.parametrize("use_cache", [False, True], ids=["compile-in-child", "disk-cache"])
def test_activation_after_fork(tmp_path: Path, use_cache: bool) -> None:
    cache_dir = str(tmp_path / "cache") if use_cache else None
    spin = compile_guest("spin", tmp_path)
    parent = AgentloopRuntime(cache_dir=cache_dir)
    brain = FakeBrain(replies=[assistant(text("from the parent"))])
    assert parent.activate(DEFAULT_AGENTLOOP, payload(), brain, None)["output"] == "from the parent"
    parent.prepare(spin)

    context = multiprocessing.get_context("fork")
    results = context.Queue()
    child = context.Process(target=_child, args=(results, cache_dir, str(spin)))
    child.start()
    try:
        outcome = results.get(timeout=TIMEOUT_SECS)
    except queue.Empty:
        outcome = ("error", f"the child produced nothing within {TIMEOUT_SECS}s (hung?)")
    finally:
        child.join(timeout=10)
        if child.is_alive():
            child.kill()
            child.join(timeout=10)
    assert outcome == ({"status": "completed", "output": "from the child"}, "turn_timeout")
    assert child.exitcode == 0
