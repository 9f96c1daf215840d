"""The component's `activate` export, around the loop's own `activate(turn)`.

`brain agentloop build` generates the world's export class; it hands each activation payload
here with the loop's function. Everything the loop raises is turned into a result the host
understands, so a Python error reaches the developer as a failed turn with a message they can
act on, never as a trap with Brain's internals in it.
"""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Callable
from types import TracebackType
from typing import Any

from brain_guest import telemetry
from brain_guest.errors import TurnFailed
from brain_guest.turn import Turn

AGENTLOOP_ERROR = "agentloop_error"
MAX_MESSAGE = 2000


def activate(loop: Callable[[Turn], Any], payload: str, seal_runtime: bool = True) -> str:
    """Run `loop` on the payload; the activation result as JSON text. `seal_runtime=False`
    (plain-Python tests of a loop) leaves the interpreter's clocks and imports alone."""
    if seal_runtime:
        seal()
    try:
        turn = Turn.from_payload(json.loads(payload))
        output = loop(turn)
        result: dict[str, Any] = {"status": "completed", "output": output}
        return json.dumps(result, separators=(",", ":"))
    except TurnFailed as exc:
        return _failed(exc.code, exc.message)
    except BaseException as exc:  # noqa: BLE001 - any escape fails the turn, with its name
        return _failed(AGENTLOOP_ERROR, describe(exc))
    finally:
        _print_sink.flush()


def describe(exc: BaseException) -> str:
    """`ValueError: bad input (loop.py, line 12, in activate)`: the exception and where the
    loop raised it. Source lines are not read (the guest has no files to read them from)."""
    text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    where = _innermost(exc.__traceback__)
    if where:
        text += f" ({where})"
    if isinstance(exc, TypeError) and "not JSON serializable" in str(exc):
        text += "; activate must return a JSON value (str, number, bool, None, list, dict)"
    return text[:MAX_MESSAGE]


def _innermost(tb: TracebackType | None) -> str:
    where = ""
    while tb is not None:
        code = tb.tb_frame.f_code
        name = code.co_filename.rsplit("/", 1)[-1]
        if not name.startswith("<"):  # frozen and generated code tells the author nothing
            where = f"{name}, line {tb.tb_lineno}, in {code.co_name}"
        tb = tb.tb_next
    return where


def _failed(code: str, message: str) -> str:
    return json.dumps({"status": "failed", "error": {"code": code, "message": message}},
                      separators=(",", ":"))


class _PrintSink(io.TextIOBase):
    """Where `print` goes: the guest has no stdout. Each line becomes a telemetry point
    (`agentloop.print`), which reaches the deployment's telemetry sink when it has one."""

    def __init__(self, stream: str) -> None:
        self._stream = stream
        self._pending = ""

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self._pending += text
        while "\n" in self._pending:
            line, self._pending = self._pending.split("\n", 1)
            self._send(line)
        return len(text)

    def flush(self) -> None:
        if self._pending:
            line, self._pending = self._pending, ""
            self._send(line)

    def _send(self, line: str) -> None:
        try:
            telemetry.record("agentloop.print", line[:MAX_MESSAGE], {"stream": self._stream})
        except Exception:  # noqa: BLE001 - a lost print line must not fail the turn
            pass


_print_sink = _PrintSink("stdout")
_error_sink = _PrintSink("stderr")


class _NoNewImports:
    """The last import finder: a module not imported at build time cannot be found later
    (the guest has no files to find it in), so say so instead of trapping in a stat()."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        raise ImportError(
            f"No module named {name!r} was imported when the Agentloop was built, and a "
            f"running Agentloop cannot import: import it at the top of the loop's module",
            name=name)


def _no_clock(*args: Any, **kwargs: Any) -> Any:
    raise RuntimeError("an Agentloop has no clock: a resumed activation must make the same "
                       "calls, so get the time from a Tool (its answer is journaled)")


def _no_entropy(*args: Any, **kwargs: Any) -> Any:
    raise RuntimeError("an Agentloop has no entropy source: `random` is seeded when the loop "
                       "is built and repeats; get random bytes from a Tool if they must differ")


def seal() -> None:
    """At the start of each activation (not at build time, which still imports and prints):
    what a running guest lacks (stdio, imports, clocks, entropy) fails with a Python exception
    that says so, not with a trap."""
    import os
    import time

    sys.stdout = _print_sink
    sys.stderr = _error_sink
    if not isinstance(sys.meta_path[0], _NoNewImports):
        # First in line, so no finder looks for files; the finders behind it stay as they are
        # (clearing their caches cost ~0.9 ms an activation, measured).
        sys.meta_path.insert(0, _NoNewImports())
    for name in ("time", "time_ns", "monotonic", "monotonic_ns", "perf_counter",
                 "perf_counter_ns", "process_time", "process_time_ns", "sleep"):
        setattr(time, name, _no_clock)
    os.urandom = _no_entropy
