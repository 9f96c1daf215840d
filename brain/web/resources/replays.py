"""POST /v1/sessions/{id}/replays: replay a finished turn against an Agentloop, offline.

Only Agentloops the server's configuration names (or the session's own) may be run: a client
never makes the server load a file it names. The replay reads the journal and never wakes the
session's actor; it runs in a short-lived `brain replay --json` subprocess, not in the web
worker: wasmtime is never loaded into a gevent worker (a fork of gunicorn's master, stack
hazard 4), a guest computing for up to the turn deadline would hold the worker's interpreter
lock away from its other requests, and a guest that exhausts its memory or crashes takes only
that process with it (docs/replay.md).
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import threading
from typing import Any

import falcon

from brain import errors
from brain.config import BrainConfig, agentloop_path
from brain.journal import SessionReader
from brain.memory_budget import RETRY_AFTER_SECS as MEMORY_RETRY_AFTER_SECS
from brain.memory_budget import MemoryBudget
from brain.settings import Settings
from brain.web.contract import MAX_SEQUENCE, READ_ERRORS, Answer, operation
from brain.web.reads import damaged_error, session_dir
from brain.web.schema import Schema, nullable

log = logging.getLogger(__name__)

REPLAY_MARGIN_SECS = 60.0
"""Beyond the turn deadline the guest runs under: the subprocess's start and its reads."""
REPLAYS_PER_WORKER = 2
"""Replays one web worker runs at once; more are refused `overloaded` (each is a process
holding an Agentloop's memory, and a machine's cores are the sessions' first)."""
BUSY_RETRY_AFTER_SECS = 5

REPLAY_BODY = Schema("ReplayBody", {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "turn": {"type": "integer", "minimum": 1, "maximum": MAX_SEQUENCE,
                 "description": "The turn's sequence (its turn_started); default: the last "
                                "finished turn. No such turn, a turn not finished, or no "
                                "finished turn at all is 400."},
        "agentloop": {"type": "string", "minLength": 1, "maxLength": 256,
                      "x-configured": "agentloops",
                      "description": "A configured Agentloop's name (any other is 400); "
                                     "default: the session's own module, as recorded at its "
                                     "creation."},
    },
}, "replay body")

RECORD = {"type": "object", "description": "A journal record (seq, kind, at, fields)."}

REPLAY_STEP = Schema("ReplayStep", {
    "type": "object",
    "required": ["call", "op", "status", "sequences"],
    "properties": {
        "call": {"type": "integer", "minimum": 1},
        "op": {"type": "string", "description": "The guest call's op, or `return`."},
        "status": {"type": "string", "enum": ["match", "answered", "diverged"]},
        "sequences": {"type": "array", "items": {"type": "integer"}},
        "answer": {"description": "What the guest was told (for `return`: its result)."},
        "message": {"type": "string"},
        "journaled": nullable(RECORD),
        "asked": nullable(RECORD),
    },
}, "replay step")

RESULT = {"type": "object", "description": "{status: completed, output} or {status: failed, "
                                           "error: {code, message}}"}

REPLAY_REPORT = Schema("ReplayReport", {
    "type": "object",
    "required": ["session_id", "turn", "activation", "agentloop", "recorded_agentloop",
                 "same_module", "verdict", "divergence", "steps", "journaled_result",
                 "returned", "journaled_records", "matched_records"],
    "properties": {
        "session_id": {"type": "string"},
        "turn": {"type": "integer"},
        "activation": {"type": "integer"},
        "agentloop": {"type": "object", "description": "What ran: path, sha256."},
        "recorded_agentloop": {"type": "object", "description": "The session's: name, sha256."},
        "same_module": {"type": "boolean"},
        "verdict": {"type": "string", "enum": ["match", "diverged"]},
        "divergence": nullable(REPLAY_STEP),
        "steps": {"type": "array", "items": REPLAY_STEP},
        "journaled_result": RESULT,
        "returned": nullable(RESULT),
        "journaled_records": {"type": "integer", "minimum": 0},
        "matched_records": {"type": "integer", "minimum": 0},
    },
}, "replay report")


class ReplaysResource:
    admits_work = True  # refused while the server drains, as a turn is

    def __init__(self, settings: Settings, config: BrainConfig) -> None:
        self.settings = settings
        self.config = config
        self._memory = MemoryBudget(settings.memory_reserve_mb)
        self._running = threading.BoundedSemaphore(REPLAYS_PER_WORKER)

    @operation("replayTurn", "Replay a finished turn against an Agentloop, sending nothing",
               {200: Answer("The report, diverged or not", REPLAY_REPORT)},
               errors=(*READ_ERRORS, 413, 415, 503), body=REPLAY_BODY)
    def on_post(self, req: falcon.Request, resp: falcon.Response, session_id: str) -> None:
        path = session_dir(self.settings, session_id)
        refused = SessionReader(path).damage()
        if refused is not None:
            raise damaged_error(self.settings.data_path, session_id, refused)
        body = req.context.body
        args = [session_id, "--json", "--data-dir", str(self.settings.data_path)]
        if body.get("turn") is not None:
            args += ["--turn", str(body["turn"])]
        if body.get("agentloop") is not None:
            args += ["--agentloop", self._configured(body["agentloop"])]
        if self._memory.exhausted():
            refusal = errors.Overloaded(self._memory.refusal_message())
            refusal.retry_after = MEMORY_RETRY_AFTER_SECS
            raise refusal
        if not self._running.acquire(blocking=False):
            refusal = errors.Overloaded(f"this worker already runs {REPLAYS_PER_WORKER} "
                                        "replays; retry after Retry-After")
            refusal.retry_after = BUSY_RETRY_AFTER_SECS
            raise refusal
        try:
            resp.media = self._run(args)
        finally:
            self._running.release()

    def _configured(self, name: str) -> str:
        spec = self.config.agentloops.get(name)
        if spec is None:
            known = ", ".join(sorted(self.config.agentloops))
            raise errors.InvalidRequest(f"agentloop: unknown name {name!r} (this server's "
                                        f"Agentloops: {known})")
        return str(agentloop_path(spec["path"]))

    def _run(self, args: list[str]) -> dict[str, Any]:
        max_secs = self.settings.max_turn_secs
        try:
            done = subprocess.run([sys.executable, "-P", "-m", "brain.cli", "replay", *args],
                                  capture_output=True, text=True, stdin=subprocess.DEVNULL,
                                  timeout=max_secs + REPLAY_MARGIN_SECS if max_secs else None)
        except subprocess.TimeoutExpired:
            raise errors.Internal("the replay did not finish in time") from None
        try:
            answer = json.loads(done.stdout)
        except ValueError:
            answer = None
        if done.returncode in (0, 1) and isinstance(answer, dict) and "verdict" in answer:
            return answer
        if done.returncode == 2 and isinstance(answer, dict) and "error" in answer:
            raise errors.from_code(answer["error"]["code"], answer["error"]["message"])
        log.warning("brain replay exited %s: %s", done.returncode, done.stderr[-2000:])
        raise errors.Internal("the replay failed")
