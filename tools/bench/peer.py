"""The LangGraph peer of tools/bench/compare.py: the same scripted turns, in process, on SQLite.

Usage: python -m tools.bench.peer [--arm text|tools] [--turns 200] [--sessions 16]
                                  [--per-session 20] [--durability async|sync|exit] [--json]
       python -m tools.bench.peer --serve [--sessions 16] [--durability ...]

Needs the `bench` extra (`pip install -e '.[bench]'`: langgraph, langgraph-checkpoint-sqlite).
What it runs, as a LangGraph application would: one compiled `StateGraph(MessagesState)` with a
`model` node (a scripted LangChain chat model answering from tools/bench/workload.py, as Brain's
`scripted` provider does) and a `tools` node (`ToolNode` with an `echo` tool, which runs a
message's tool calls in parallel threads), routed by `tools_condition`; checkpointed by one
`SqliteSaver` on a file in the system temp dir, opened with LangGraph's own `journal_mode=WAL`
plus `PRAGMA synchronous=FULL` (every commit fsyncs the WAL). `graph.invoke` returns only after
every checkpoint and write of the turn is committed, whatever the durability mode; the mode
(default: LangGraph's default, `async`) only says whether a step waits for the previous step's
checkpoint.

Workloads (the same as tools/bench/turns.py drives against Brain): after one warm-up turn,
`--turns` sequential turns on one thread_id (p50/p99 latency); then `--sessions` threads, each
driving its own thread_id for three untimed warm-up turns, all at once, and then for
`--per-session` turns (turns/s up to the last completion).
`--json` prints one JSON object instead of text, for compare.py.

`--serve` keeps both arms' graphs and databases open and runs blocks of those workloads on
request, one JSON object per line each way (`PeerArms`): tools/bench/compare.py alternates such
blocks with Brain's, so that a minute of slower CPU slows both sides instead of one.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from tools.bench.common import percentile, summary_ms
from tools.bench.workload import ANSWER, CALLS_PER_ROUND, TOOL_ROUNDS, echo_input

DEADLINE_SECS = 600.0


class ScriptedChatModel(BaseChatModel):
    """Answers like Brain's scripted provider with a bench script: `tool_rounds` rounds of
    CALLS_PER_ROUND `echo` calls, then ANSWER. The position in the script is the number of AI
    messages after the last human one, so every turn replays it from the start."""

    tool_rounds: int = 0
    delay_ms: int = 0
    """Milliseconds each call sleeps before it answers, as a scripted step's `delay_ms` makes
    Brain's wait (tools/bench/fleet.py: a model that answers in seconds); 0: at once."""

    @property
    def _llm_type(self) -> str:
        return "brain-bench-scripted"

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: Any = None, **kwargs: Any) -> ChatResult:
        if self.delay_ms:
            time.sleep(self.delay_ms / 1000)
        last_human = max((i for i, m in enumerate(messages) if isinstance(m, HumanMessage)),
                         default=-1)
        position = sum(1 for m in messages[last_human + 1:] if isinstance(m, AIMessage))
        if position < self.tool_rounds:
            calls = [{"name": "echo", "args": echo_input(position, k),
                      "id": f"call_{len(messages)}_{k}", "type": "tool_call"}
                     for k in range(CALLS_PER_ROUND)]
            message = AIMessage(content="", tool_calls=calls)
        else:
            message = AIMessage(content=ANSWER)
        return ChatResult(generations=[ChatGeneration(message=message)])


@tool
def echo(i: int) -> str:
    """Return the input unchanged."""
    return json.dumps({"i": i})


def build_graph(saver: SqliteSaver, tool_rounds: int, delay_ms: int = 0) -> Any:
    model = ScriptedChatModel(tool_rounds=tool_rounds, delay_ms=delay_ms)

    def call_model(state: MessagesState) -> dict[str, list[BaseMessage]]:
        return {"messages": [model.invoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("model", call_model)
    builder.add_node("tools", ToolNode([echo]))
    builder.add_edge(START, "model")
    builder.add_conditional_edges("model", tools_condition)
    builder.add_edge("tools", "model")
    return builder.compile(checkpointer=saver)


def open_saver(path: Path) -> SqliteSaver:
    """A SqliteSaver on `path`: its own set-up (journal_mode=WAL), then synchronous=FULL."""
    conn = sqlite3.connect(str(path), check_same_thread=False)  # the saver locks per use
    saver = SqliteSaver(conn)
    saver.setup()
    conn.execute("PRAGMA synchronous=FULL")
    mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
    sync = conn.execute("PRAGMA synchronous").fetchone()[0]
    if (mode, sync) != ("wal", 2):
        raise RuntimeError(f"SQLite is journal_mode={mode}, synchronous={sync}; wanted wal, 2")
    return saver


def turn_runner(graph: Any, durability: str, tool_rounds: int) -> Callable[[str, str], None]:
    expected_calls = tool_rounds * CALLS_PER_ROUND

    def run_turn(thread_id: str, text: str) -> None:
        state = graph.invoke({"messages": [HumanMessage(text)]},
                             {"configurable": {"thread_id": thread_id}}, durability=durability)
        last = state["messages"][-1]
        if not isinstance(last, AIMessage) or last.content != ANSWER:
            raise RuntimeError(f"turn did not end with the scripted answer: {last!r}")
        if expected_calls:
            messages = state["messages"]
            human = max(i for i, m in enumerate(messages) if isinstance(m, HumanMessage))
            results = sum(1 for m in messages[human:] if m.type == "tool")
            if results != expected_calls:
                raise RuntimeError(f"{results} tool results in the turn, {expected_calls} expected")

    return run_turn


def measure(arm: str, turns: int, sessions: int, per_session: int,
            durability: str, warm_up_turns: int = 3) -> dict[str, Any]:
    """Run the workload on a fresh database; latencies in seconds."""
    arms = PeerArms(durability, sessions, arms=(arm,))
    try:
        arms.runner(arm)("sequential", "warm-up")
        latencies = arms.sequential(turns, arm)
        # Untimed concurrent turns per thread first, as Brain's arm gets per session.
        arms.concurrent(arm, warm_up_turns)
        run = arms.concurrent(arm, per_session)
    except RuntimeError as exc:
        raise SystemExit(f"peer benchmark failed: {exc}") from None
    finally:
        arms.close()
    elapsed = run["elapsed"]
    return {"arm": arm, "durability": durability, "latencies": latencies,
            "p50": percentile(latencies, 0.5), "p99": percentile(latencies, 0.99),
            "turns": run["turns"], "elapsed": elapsed,
            "turns_per_sec": run["turns"] / elapsed if elapsed > 0 else 0.0,
            "tool_calls_per_turn": (TOOL_ROUNDS if arm == "tools" else 0) * CALLS_PER_ROUND}


class PeerArms:
    """The arms (by default both) on their own fresh databases, kept open between blocks.

    The sequential turns go to one thread_id and the concurrent turns of each arm to
    `sessions` thread_ids, so each block continues the conversations of the last one. No turn
    starts after DEADLINE_SECS from opening: the sequential loop stops, a concurrent one
    fails."""

    ROUNDS = {"text": 0, "tools": TOOL_ROUNDS}

    def __init__(self, durability: str, sessions: int,
                 arms: tuple[str, ...] = ("text", "tools")) -> None:
        self.sessions = sessions
        self.deadline = time.monotonic() + DEADLINE_SECS
        self._tmp = tempfile.TemporaryDirectory(prefix="brain-bench-peer-")
        self._savers: list[SqliteSaver] = []
        self._runners: dict[str, Callable[[str, str], None]] = {}
        for arm in arms:
            rounds = self.ROUNDS[arm]
            saver = open_saver(Path(self._tmp.name) / f"{arm}.sqlite")
            self._savers.append(saver)
            self._runners[arm] = turn_runner(build_graph(saver, rounds), durability, rounds)
        self._turns = 0

    def close(self) -> None:
        for saver in self._savers:
            saver.conn.close()
        self._tmp.cleanup()

    def runner(self, arm: str) -> Callable[[str, str], None]:
        return self._runners[arm]

    def _text(self) -> str:
        self._turns += 1  # a label only: threads may race on it
        return f"turn {self._turns}"

    def warm_up(self, arm: str, turns: int) -> None:
        """Untimed: one sequential turn (text arm) and `turns` per thread_id, all at once."""
        if arm == "text":
            self._runners["text"]("sequential", "warm-up")
        self.concurrent(arm, turns)

    def sequential(self, turns: int, arm: str = "text") -> list[float]:
        """Seconds of each of `turns` turns on the sequential thread_id."""
        run_turn, latencies = self._runners[arm], []
        for _ in range(turns):
            if time.monotonic() > self.deadline:
                break
            start = time.perf_counter()
            run_turn("sequential", self._text())
            latencies.append(time.perf_counter() - start)
        return latencies

    def concurrent(self, arm: str, per_session: int) -> dict[str, Any]:
        """`per_session` turns on each of the arm's thread_ids, one thread each, all at once:
        the turns completed and the seconds from the start to the last completion."""
        run_turn, finished, errors = self._runners[arm], [], []

        def drive(thread_id: str) -> None:
            try:
                for _ in range(per_session):
                    if time.monotonic() > self.deadline:
                        raise TimeoutError("benchmark deadline")
                    run_turn(thread_id, self._text())
                    finished.append(time.perf_counter())
            except BaseException as exc:  # reported below
                errors.append(exc)

        threads = [threading.Thread(target=drive, args=(f"{arm}-{n}",))
                   for n in range(self.sessions)]
        start = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=DEADLINE_SECS)
        if errors:
            raise RuntimeError(f"peer {arm} arm failed: {errors[0]!r}")
        return {"turns": len(finished),
                "elapsed": (max(finished) if finished else time.perf_counter()) - start}


def serve(durability: str, sessions: int) -> None:
    """Answer JSON requests on stdin, one per line, until it closes: `{"op": "warm_up", "arm",
    "turns"}`, `{"op": "sequential", "turns"}` and `{"op": "concurrent", "arm", "per_session"}`,
    each answered by one JSON line (`{"error": ...}` when it failed)."""
    import sys

    arms = PeerArms(durability, sessions)
    try:
        print(json.dumps({"ready": True}), flush=True)
        for line in sys.stdin:
            request = json.loads(line)
            try:
                if request["op"] == "warm_up":
                    arms.warm_up(request["arm"], request["turns"])
                    answer: dict[str, Any] = {}
                elif request["op"] == "sequential":
                    answer = {"latencies": arms.sequential(request["turns"])}
                else:
                    answer = arms.concurrent(request["arm"], request["per_session"])
            except Exception as exc:
                answer = {"error": repr(exc)}
            print(json.dumps(answer), flush=True)
    finally:
        arms.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--arm", choices=("text", "tools"), default="text")
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--sessions", type=int, default=16)
    parser.add_argument("--per-session", type=int, default=20)
    parser.add_argument("--durability", choices=("async", "sync", "exit"), default="async")
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout")
    parser.add_argument("--serve", action="store_true",
                        help="run blocks of turns on request (tools/bench/compare.py)")
    args = parser.parse_args()
    if args.serve:
        serve(args.durability, args.sessions)
        return
    result = measure(args.arm, args.turns, args.sessions, args.per_session, args.durability)
    if args.json:
        print(json.dumps(result))
        return
    print(f"LangGraph peer, arm {args.arm}, durability {args.durability}, SqliteSaver "
          "(WAL, synchronous=FULL)")
    print(f"sequential turns: {summary_ms(result['latencies'])} over {len(result['latencies'])}")
    print(f"concurrent: {args.sessions} threads x {args.per_session} turns: "
          f"{result['turns_per_sec']:,.1f} turns/s ({result['turns']} turns in "
          f"{result['elapsed']:.2f} s)")


if __name__ == "__main__":
    main()
