"""Cost of one outbound effect call: the `http` Tool route and a streamed model call, in-process.

Usage: python -m tools.bench.netcalls [--calls 300] [--deltas 50] [--cancels 20]

Both go through Brain's own HTTP client against local fake servers speaking real HTTP over
loopback sockets (the test servers of tests/tools/toolserver.py and tests/models/fakes.py, one
thread per connection). Reported per call: wall time (p50, p99, mean) and process CPU time
(client and server threads together; the server side is the same code for every Brain version,
so a difference is the client's). `--cancels`: calls to a server that never answers are
cancelled after 0.1 to 0.15 s, and the time from the cancel to the call's return is reported.
The machine is shared: compare runs taken in one sitting, alternating the versions.
"""

from __future__ import annotations

import argparse
import threading
import time

from brain.models import make_provider
from brain.tools import run_tool
from tests.models.fakes import FakeServer, json_answer, openai_chunk, openai_frames, sse_answer
from tests.tools.toolserver import ToolServer
from tools.bench.common import loadavg, summary_ms


def timed(calls: int, one) -> tuple[list[float], float]:
    """Wall seconds of each call, and process CPU seconds per call."""
    walls: list[float] = []
    cpu = time.process_time()
    for _ in range(calls):
        started = time.perf_counter()
        one()
        walls.append(time.perf_counter() - started)
    return walls, (time.process_time() - cpu) / calls


def report(name: str, walls: list[float], cpu: float) -> None:
    print(f"{name:<28} {summary_ms(walls)}; CPU {cpu * 1000:.3f} ms/call")


def tool_calls(calls: int) -> None:
    with ToolServer() as server:
        tool = {"name": "lookup", "route": "http", "url": server.url}

        def one() -> None:
            out = run_tool(tool, {"id": "c", "input": {"w": 1}}, session_id="s", sequence=1,
                           deadline=time.time() + 30, cancel=threading.Event())
            assert out.outcome == "ok", out

        one()  # warm-up (imports, first TLS-free connect)
        report("http tool call", *timed(calls, one))


def model_calls(calls: int, deltas: int) -> None:
    chunks = [openai_chunk({"content": f"w{i} "}) for i in range(deltas)]
    chunks.append(openai_chunk({}, "stop"))
    with FakeServer() as server:
        spec = {"provider": "openai", "base_url": f"{server.url}/v1", "model": "m"}
        streamed = make_provider("bench", spec, environ={})
        whole = make_provider("bench", {**spec, "stream": False}, environ={})
        request = {"messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]}
        answer = {"choices": [{"index": 0, "finish_reason": "stop",
                               "message": {"role": "assistant", "content": "hello"}}]}
        for _ in range(calls + 1):
            server.answer(sse_answer(openai_frames(chunks)))
        got: list[str] = []
        stream_one = lambda: streamed.call(request, got.append, threading.Event())  # noqa: E731
        stream_one()
        report(f"model call, {deltas} deltas", *timed(calls, stream_one))
        for _ in range(calls + 1):
            server.answer(json_answer(200, answer))
        whole_one = lambda: whole.call(request, got.append, threading.Event())  # noqa: E731
        whole_one()
        report("model call, one JSON body", *timed(calls, whole_one))


def cancel_latency(cancels: int) -> None:
    with ToolServer(lambda conn, req: conn.sleep(30)) as server:
        tool = {"name": "lookup", "route": "http", "url": server.url}
        latencies: list[float] = []
        for i in range(cancels):
            cancel = threading.Event()
            fired: list[float] = []

            def fire(cancel: threading.Event = cancel, fired: list[float] = fired) -> None:
                fired.append(time.perf_counter())
                cancel.set()

            timer = threading.Timer(0.1 + (i % 10) * 0.0047, fire)  # not in step with any poll
            timer.start()
            out = run_tool(tool, {"id": "c", "input": {}}, session_id="s", sequence=1,
                           deadline=time.time() + 30, cancel=cancel)
            latencies.append(time.perf_counter() - fired[0])
            assert out.outcome == "cancelled", out
        report("cancel -> return (tool)", latencies, 0.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--deltas", type=int, default=50)
    parser.add_argument("--cancels", type=int, default=20)
    args = parser.parse_args()
    print(f"before: {loadavg()}")
    tool_calls(args.calls)
    model_calls(args.calls, args.deltas)
    cancel_latency(args.cancels)
    print(f"after: {loadavg()}")


if __name__ == "__main__":
    main()
