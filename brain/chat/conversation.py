"""The interactive chat: a prompt, a live follower that streams the session, and commands.

Two threads share the terminal. The follower reads the session's Events over SSE with model
deltas and writes them as they arrive (deltas into the pending answer, Tool calls and their
outcomes as they commit, the turn's end). The main thread reads lines and runs each turn as a
`send` under a CancelSignal on a worker thread, so that Ctrl-C, which Python delivers to the
main thread, can fire the signal: the SDK then waits for the turn's admission and cancels it.
A second Ctrl-C while that cancel is under way leaves at once.
"""

from __future__ import annotations

import sys
import threading
from typing import TextIO

from brain.chat import render
from brain.client import (
    BrainAPIError,
    BrainClientError,
    CancelSignal,
    ClientClosed,
    Event,
    ModelDelta,
    Session,
    TurnResult,
)
from brain.protocol.records import (
    SESSION_ENDED,
    SESSION_FAILED,
    TOOL_CALL_ENDED,
    TOOL_CALL_FAILED,
    TOOL_CALL_STARTED,
    TURN_ENDED,
    TURN_FAILED,
)

HELP = ("commands: /transcript, /events N (the last N Events), /end (end the session), "
        "/quit (leave it open), /help; Ctrl-C interrupts a turn, twice leaves")
RENDER_WAIT_SECS = 10.0  # how long a finished send waits for the follower to show its end


class Leave(Exception):
    """The user asked to leave (a second Ctrl-C, /quit, end of input)."""


class Follower(threading.Thread):
    """Writes the session's live Events and model deltas to the terminal as they arrive."""

    def __init__(self, session: Session, cursor: int, out: TextIO) -> None:
        super().__init__(name="brain-chat-follower", daemon=True)
        self.out = out
        self.stream = session.follow(cursor, deltas=True)  # subscribed before any turn is sent
        self.lock = threading.Lock()
        self.turn_done: dict[int, threading.Event] = {}
        self.tools: dict[int, str] = {}  # tool_call_started sequence -> tool name
        self.streamed = False  # deltas of the current answer were written
        self.failure: BaseException | None = None

    def done_event(self, turn: int) -> threading.Event:
        with self.lock:
            return self.turn_done.setdefault(turn, threading.Event())

    def run(self) -> None:
        try:
            for item in self.stream:
                if isinstance(item, ModelDelta):
                    self._write(item.delta, newline=False)
                    self.streamed = True
                else:
                    self._show(item)
        except ClientClosed:
            pass
        except BrainClientError as exc:
            self.failure = exc
            self._write(f"\n[live stream stopped: {exc}]")

    def stop(self) -> None:
        self.stream.close()  # safe from this thread: the follower's loop then ends

    def _show(self, event: Event) -> None:
        if event.kind == TOOL_CALL_STARTED:
            self.tools[event.sequence] = str(event.data.get("tool"))
            self._line(render.tool_started_line(event))
        elif event.kind in (TOOL_CALL_ENDED, TOOL_CALL_FAILED):
            tool = self.tools.pop(event.data.get("started"), "tool")
            self._line(render.tool_finished_line(event, tool))
        elif event.origin is not None:
            self._line(f"  • {render.event_line(event)}")
        elif event.kind == TURN_ENDED:
            if self.streamed:
                self._write("")
            else:
                self._write(render.message_text(event.data.get("output")))
            self._finish(event)
        elif event.kind == TURN_FAILED:
            self._line(f"[turn failed: {render.error_text(event.data.get('error') or {})}]")
            self._finish(event)
        elif event.kind in (SESSION_ENDED, SESSION_FAILED):
            self._line(f"[{event.kind.replace('_', ' ')}]")

    def _line(self, text: str) -> None:
        """A line of its own, after any answer text streamed so far."""
        if self.streamed:
            self._write("")
            self.streamed = False
        self._write(text)

    def _finish(self, event: Event) -> None:
        self.streamed = False
        self.done_event(int(event.data.get("started", -1))).set()

    def _write(self, text: str, newline: bool = True) -> None:
        self.out.write(text + ("\n" if newline else ""))
        self.out.flush()


class Conversation:
    """One interactive chat with `session` on a terminal."""

    def __init__(self, session: Session, out: TextIO = sys.stdout) -> None:
        self.session = session
        self.out = out
        self.follower = Follower(session, session.last_sequence or 0, out)

    def run(self) -> int:
        if hasattr(self.out, "reconfigure"):  # a terminal that cannot show ⚙ gets a '?'
            self.out.reconfigure(errors="replace")
        self.say(f"session {self.session.id} ({self.session.status}); /help for commands")
        self.follower.start()
        try:
            while True:
                line = self._read()
                if line.startswith("/"):
                    self.command(line)
                elif line.strip():
                    self.turn(line)
        except (Leave, KeyboardInterrupt):  # Ctrl-C outside a turn (a command waiting) leaves
            self.say(f"\nleft session {self.session.id}")
            return 0
        finally:
            self.follower.stop()

    def _read(self) -> str:
        try:
            return input("> ")
        except (EOFError, KeyboardInterrupt):
            self.say("")
            raise Leave from None

    def say(self, text: str) -> None:
        self.out.write(text + "\n")
        self.out.flush()

    def turn(self, text: str) -> None:
        """Send under a signal on a worker; Ctrl-C fires the signal, a second one leaves."""
        signal = CancelSignal()
        answer: list[TurnResult | BaseException] = []
        answered = threading.Event()
        worker = threading.Thread(target=self._send, args=(text, signal, answer, answered),
                                  daemon=True, name="brain-chat-send")
        worker.start()
        # Waiting on an Event, not on join(): a KeyboardInterrupt that lands inside
        # Thread.join can leave the thread reported dead while it still runs.
        while not answered.is_set():
            try:
                answered.wait(0.1)
            except KeyboardInterrupt:
                if signal.cancelled:
                    raise Leave from None
                self.say("\n[interrupting: Ctrl-C again to leave]")
                signal.cancel("interrupted from brain chat")
        result = answer[0]
        if isinstance(result, BaseException):
            self.say(f"[error: {result}]")
            return
        if not self.follower.done_event(result.sequence).wait(RENDER_WAIT_SECS):
            # The live stream did not show this turn's end (it stopped): show the answer here.
            self.say(render.message_text(result.output) if result.ok
                     else f"[turn failed: {render.error_text(result.raw.get('error') or {})}]")

    def _send(self, text: str, signal: CancelSignal, answer: list[TurnResult | BaseException],
              answered: threading.Event) -> None:
        try:
            answer.append(self.session.send(text, signal=signal))
        except BaseException as exc:  # noqa: BLE001 - handed to the main thread to show
            answer.append(exc)
        finally:
            answered.set()

    def command(self, line: str) -> None:
        name, _, arg = line.strip().partition(" ")
        try:
            if name == "/quit":
                raise Leave
            if name == "/help":
                self.say(HELP)
            elif name == "/transcript":
                for text in render.transcript_lines(self.session.transcript().messages):
                    self.say(text)
            elif name == "/events":
                self.show_events(arg)
            elif name == "/end":
                self.session.end()
                self.say(f"session {self.session.id} {self.session.status}")
                raise Leave
            else:
                self.say(f"unknown command {name}; {HELP}")
        except BrainAPIError as exc:
            self.say(f"[{exc.code}: {exc.message}]")

    def show_events(self, arg: str) -> None:
        try:
            count = int(arg) if arg.strip() else 10
        except ValueError:
            self.say("usage: /events N")
            return
        count = max(1, min(count, 100))
        last = self.session.refresh().last_sequence
        page = self.session.events_page(after=max(0, last - count), limit=count)
        for event in page.events:
            self.say(render.event_line(event))
