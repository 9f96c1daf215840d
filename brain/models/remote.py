"""What the network providers share: spec keys, the API key lookup, and one call's skeleton.

A family (openai.py, anthropic.py) only maps formats: it builds the wire request from the
contract's request, turns a JSON body or a stream of SSE events into the contract's result, and
finds the message in an error body, with the rules both formats share from wire.py. Timeouts and
outcomes live in http.py, the exchange itself in brain/net/http_exchange.py; they are the same
for every family.
"""

from __future__ import annotations

import json
import logging
import os
import ssl
import threading
from abc import abstractmethod
from collections.abc import Mapping
from typing import Any

from brain.models.base import (
    ModelCallError,
    OnDelta,
    Provider,
    ProviderSpecError,
    Request,
    Result,
    check_cancel,
    safe_delta,
)
from brain.models.http import (
    BODY_LIMIT,
    MESSAGE_LIMIT,
    Endpoint,
    Timeouts,
    http_error,
    model_call_error,
    read_error_body,
    scrub,
)
from brain.models.tool_names import from_wire, to_wire
from brain.net.http_exchange import Exchange, ExchangeFailed
from brain.net.sse import SseEvent

log = logging.getLogger("brain.models")


def spec_value(name: str, spec: dict[str, Any], key: str, default: Any,
               kind: type | tuple[type, ...], must: str) -> Any:
    """`spec[key]` (or `default` when absent), refused unless it is a `kind`; `must` ends the
    refusal ("must be true or false")."""
    value = spec.get(key, default)
    if not isinstance(value, kind):
        raise ProviderSpecError(f"models.{name}: {key} {must}")
    return value


class KeySource:
    """Reads the API key from the environment at call time, so no provider ever holds it.

    Its repr names only the variable, and pickling keeps only the variable (the unpickled
    source reads `os.environ`), so dumping or shipping a provider cannot reveal the key.
    """

    __slots__ = ("_environ", "variable")

    def __init__(self, environ: Mapping[str, str] | None, variable: str) -> None:
        self._environ = environ
        self.variable = variable

    def read(self) -> str:
        environ = os.environ if self._environ is None else self._environ
        key = environ.get(self.variable)
        if not key:
            raise ModelCallError("error", f"environment variable {self.variable} is not set")
        return key

    def __repr__(self) -> str:
        return f"KeySource(${self.variable})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (KeySource, (None, self.variable))


class StreamState:
    """Accumulates one streamed answer; a family subclasses it for its event shapes."""

    done = False

    @abstractmethod
    def feed(self, event: SseEvent, on_delta: OnDelta) -> None:
        """Apply one event; set `done` on the stream's terminal event."""

    @abstractmethod
    def result(self) -> Result:
        """The complete result, once `done`."""


class RemoteProvider(Provider):
    """A provider reached over HTTP: one POST per call, never retried."""

    default_base_url = ""
    terminal = "the end of the stream"

    def __init__(self, name: str, spec: dict[str, Any], environ: Mapping[str, str]) -> None:
        super().__init__(name, spec)
        self.endpoint = Endpoint.parse(name, str(spec.get("base_url", self.default_base_url)))
        self.timeouts = Timeouts.from_spec(name, spec)
        model = spec.get("model")
        if not isinstance(model, str) or not model:
            raise ProviderSpecError(f"models.{name}: model is required")
        self.model = model
        api_key_env = spec.get("api_key_env")
        if api_key_env is not None and (not isinstance(api_key_env, str) or not api_key_env):
            raise ProviderSpecError(f"models.{name}: api_key_env must be a variable name")
        self.key_source = KeySource(environ, api_key_env) if api_key_env else None
        self.stream = spec_value(name, spec, "stream", True, bool, "must be true or false")
        self.options = spec_value(name, spec, "options", {}, dict, "must be a table")
        self.headers = spec.get("headers", {})
        if not isinstance(self.headers, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in self.headers.items()
        ):
            raise ProviderSpecError(f"models.{name}: headers must be a table of strings")
        self.ca_file = spec_value(name, spec, "ca_file", None, (str, type(None)), "must be a path")

    # -- what a family provides ----------------------------------------------------------------

    @abstractmethod
    def build(self, request: Request, key: str | None) -> tuple[str, dict[str, str], dict]:
        """(path under base_url, headers, JSON body). Raise ValueError for unmappable input."""

    @abstractmethod
    def parse(self, body: Any) -> Result:
        """A complete non-streamed JSON answer → result. Raise ValueError if malformed."""

    @abstractmethod
    def new_stream(self) -> StreamState:
        """A fresh accumulator for one streamed answer."""

    @abstractmethod
    def error_detail(self, body: Any) -> str:
        """The human message inside an error body (JSON already decoded, or None)."""

    # -- the call ------------------------------------------------------------------------------

    def call(self, request: Request, on_delta: OnDelta, cancel: threading.Event) -> Result:
        wire_request, back = to_wire(request)  # `server.tool` travels as `server__tool`
        return from_wire(self._call(wire_request, on_delta, cancel), back)

    def _call(self, request: Request, on_delta: OnDelta, cancel: threading.Event) -> Result:
        check_cancel(cancel)
        on_delta = safe_delta(on_delta, log)
        key = self.key_source.read() if self.key_source else None
        try:
            path, headers, body = self.build(request, key)
            payload = json.dumps(body, ensure_ascii=False).encode("utf-8")
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            reason = f"{type(exc).__name__}: {exc}"
            if key:
                reason = reason.replace(key, "[redacted]")
            raise ModelCallError(
                "error", f"cannot map the request ({reason})"[:MESSAGE_LIMIT]
            ) from None
        log.debug("model %s: POST %s%s", self.name, self.endpoint, path)
        secrets = [key or ""]
        headers = {"Content-Type": "application/json", **self.headers, **headers}
        try:
            tls = self._tls_context() if self.endpoint.scheme == "https" else None
            origin, limits = self.endpoint.origin, self.timeouts.limits()
            with Exchange(origin, limits, cancel, tls) as exchange:
                exchange.request("POST", self.endpoint.target(path), headers, payload)
                if not 200 <= exchange.status < 300:
                    detail = self._error_text(read_error_body(exchange))
                    raise http_error(exchange.status, detail, secrets)
                if "text/event-stream" in exchange.header("Content-Type").lower():
                    return self._read_stream(exchange, on_delta, secrets)
                return self._read_json(exchange, on_delta)
        except ExchangeFailed as failure:
            exc = model_call_error(failure)
            log.debug("model %s: %s (%s)", self.name, exc.outcome, exc.message)
            raise exc from None
        except ModelCallError as exc:
            log.debug("model %s: %s (%s)", self.name, exc.outcome, exc.message)
            raise

    def options_for(self, request: Request) -> dict[str, Any]:
        """Spec options, overridden key by key by the request's options."""
        return {**self.options, **(request.get("options") or {})}

    def _tls_context(self) -> ssl.SSLContext:
        """Verified TLS; `ca_file` adds a private CA (self-hosted servers). Never unverified."""
        try:
            return ssl.create_default_context(cafile=self.ca_file)
        except (OSError, ssl.SSLError):
            raise ModelCallError("error", f"cannot load ca_file {self.ca_file}") from None

    def _read_json(self, exchange: Exchange, on_delta: OnDelta) -> Result:
        raw = exchange.read_body(BODY_LIMIT)
        try:
            result = self.parse(json.loads(raw))
        except (ValueError, TypeError, KeyError, AttributeError, IndexError):
            raise ModelCallError("unknown", "unreadable response body") from None
        text = "".join(b["text"] for b in result["message"]["content"] if b["type"] == "text")
        if text:
            on_delta(text)
        return result

    def _read_stream(self, exchange: Exchange, on_delta: OnDelta, secrets: list[str]) -> Result:
        state = self.new_stream()
        for event in exchange.events():
            try:
                state.feed(event, on_delta)
                if state.done:
                    return state.result()
            except ModelCallError as exc:
                message = scrub(" ".join(exc.message.split()), secrets)[:MESSAGE_LIMIT]
                raise ModelCallError(exc.outcome, message, exc.status) from None
            except (ValueError, TypeError, KeyError, AttributeError, IndexError):
                raise ModelCallError("unknown", "unreadable stream event") from None
        raise ModelCallError("unknown", f"stream ended before {self.terminal}")

    def _error_text(self, raw: bytes) -> str:
        try:
            return self.error_detail(json.loads(raw)) or ""
        except (ValueError, TypeError, KeyError, AttributeError):
            return raw[:200].decode("utf-8", errors="replace") if raw else ""
