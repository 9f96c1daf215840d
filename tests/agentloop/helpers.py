"""Test guests compiled from WAT, and a fake Brain that answers guest calls in-process.

The fake host is the real interface an Agentloop sees: a plain function from request dict to
result dict. It keeps a transcript, a kv store and scripted model replies, and records every
request so tests can check the exact sequence of guest calls.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import wasmtime

GUESTS = Path(__file__).with_name("guests")


def wat_string(data: bytes) -> str:
    """Bytes as the inside of a WAT string literal."""
    return "".join(
        chr(b) if 0x20 <= b < 0x7F and b not in (0x22, 0x5C) else f"\\{b:02x}" for b in data
    )


def compile_guest(name: str, out_dir: Path, **subs: Any) -> Path:
    """guests/{name}.wat with its placeholders filled, compiled to {out_dir}/{name}.wasm."""
    text = (GUESTS / f"{name}.wat").read_text()
    fills = {
        "ALLOC": (GUESTS / "alloc.inc.wat").read_text(),
        "WRAP": (GUESTS / "wrap.inc.wat").read_text(),
    }
    for key, value in subs.items():
        fills[key.upper()] = value if isinstance(value, str) else str(value)
    for key, value in fills.items():
        text = text.replace("{{" + key + "}}", value)
    assert "{{" not in text, f"unfilled placeholder in {name}.wat"
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{name}-{hashlib.sha256(text.encode()).hexdigest()[:12]}.wasm"
    path.write_bytes(wasmtime.wat2wasm(text))
    return path


def send_const_guest(request: bytes, out_dir: Path) -> Path:
    return compile_guest(
        "send_const", out_dir, request=wat_string(request), request_len=len(request)
    )


def payload(text_or_blocks: Any = "hi") -> dict[str, Any]:
    return {
        "kind": "turn",
        "session_id": "s-test",
        "turn": 7,
        "input": text_or_blocks,
        "limits": {"max_model_calls": 128},
    }


def text(message: str) -> dict[str, Any]:
    return {"type": "text", "text": message}


def assistant(*blocks: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": list(blocks)}


def tool_call(call_id: str, name: str, input: Any) -> dict[str, Any]:
    return {"type": "tool_call", "id": call_id, "name": name, "input": input}


class FakeBrain:
    """Answers guest calls like Brain's session actor would, from scripted replies.

    `replies` are the model's messages in order (or error results); `tool` computes a tool
    result from (name, input).
    """

    def __init__(
        self,
        replies: list[dict[str, Any]] | None = None,
        transcript: list[dict[str, Any]] | None = None,
        tool: Callable[[str, Any], dict[str, Any]] | None = None,
    ) -> None:
        self.replies = list(replies or [])
        self.messages = copy.deepcopy(transcript or [])
        self.tool = tool or (lambda name, input: {"content": input, "is_error": False})
        self.kv: dict[str, Any] = {}
        self.sequence = 10
        self.requests: list[dict[str, Any]] = []
        self.errors: dict[str, dict[str, Any]] = {}  # op -> error result to return

    def _next(self) -> int:
        self.sequence += 1
        return self.sequence

    def __call__(self, request: dict[str, Any]) -> dict[str, Any]:
        self.requests.append(copy.deepcopy(request))
        op = request["op"]
        if op in self.errors:
            return self.errors[op]
        if op == "transcript.read":
            return {"messages": copy.deepcopy(self.messages), "through_sequence": self.sequence}
        if op == "transcript.set":
            if request["messages"] == self.messages:
                return {"sequence": self.sequence}
            self.messages = copy.deepcopy(request["messages"])
            return {"sequence": self._next()}
        if op == "model.call":
            if not self.replies:
                return {"error": {"code": "model_call_limit", "message": "no more replies"}}
            reply = self.replies.pop(0)
            if "error" in reply:
                return reply
            return {"message": reply, "stop_reason": "end_turn", "usage": {"input_tokens": 3}}
        if op == "tools.call":
            results = []
            for call in request["calls"]:
                result = self.tool(call["name"], call["input"])
                outcome = "error" if result.get("is_error") else "ok"
                results.append({**result, "outcome": outcome})
            return {"results": results}
        if op == "kv.read":
            key = request["key"]
            return {"found": key in self.kv, "value": self.kv.get(key)}
        if op == "kv.put":
            self.kv[request["key"]] = request["value"]
            return {"sequence": self._next()}
        if op == "kv.delete":
            self.kv.pop(request["key"], None)
            return {"sequence": self._next()}
        if op == "events.emit":
            return {"sequence": self._next()}
        if op == "telemetry.record":
            return {}
        return {"error": {"code": "invalid_request", "message": f"unknown op {op}"}}

    def ops(self) -> list[str]:
        return [r["op"] for r in self.requests]
