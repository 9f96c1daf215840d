"""How a model call uses HTTP: the spec's timeouts and base URL, and what each failure means.

The exchange itself (connect, TLS, send, receive, cancellation) is brain/net/http_exchange.py,
shared with the `http` Tool route. What is the models' own is the outcome rule of
docs/models.md: before the whole request was written the model cannot have seen it (`error`);
after that Brain cannot know (`unknown`, or `timeout` when one of our own limits expired);
`cancelled` whenever the caller asked to stop.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from brain.models.base import ModelCallError, ProviderSpecError
from brain.net.http_exchange import Cause, Exchange, ExchangeFailed, Limits, Origin

ERROR_BODY_LIMIT = 64 << 10
BODY_LIMIT = 64 << 20
MESSAGE_LIMIT = 300


@dataclass(frozen=True)
class Timeouts:
    """Per-model limits, in seconds (spec keys `connect_timeout_s`, ...)."""

    connect_s: float = 10.0
    first_byte_s: float = 120.0
    idle_s: float = 60.0

    @classmethod
    def from_spec(cls, name: str, spec: dict[str, Any]) -> Timeouts:
        values = {}
        for field, key in (
            ("connect_s", "connect_timeout_s"),
            ("first_byte_s", "first_byte_timeout_s"),
            ("idle_s", "idle_timeout_s"),
        ):
            if key in spec:
                value = spec[key]
                if not isinstance(value, int | float) or isinstance(value, bool) or value <= 0:
                    raise ProviderSpecError(f"models.{name}: {key} must be a number > 0")
                values[field] = float(value)
        return cls(**values)

    def limits(self) -> Limits:
        """A model call has no overall deadline: a long answer may stream as long as it flows."""
        return Limits(connect_s=self.connect_s, first_byte_s=self.first_byte_s, idle_s=self.idle_s)


@dataclass(frozen=True)
class Endpoint:
    """Where to POST: parsed once from `base_url`, without any userinfo it might carry."""

    scheme: str
    host: str
    port: int
    path: str
    query: str = ""

    @classmethod
    def parse(cls, name: str, url: str) -> Endpoint:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ProviderSpecError(f"models.{name}: base_url must be an http(s) URL")
        try:
            port = parts.port or (443 if parts.scheme == "https" else 80)
        except ValueError:
            raise ProviderSpecError(f"models.{name}: base_url has a bad port") from None
        return cls(parts.scheme, parts.hostname, port, parts.path.rstrip("/"), parts.query)

    @property
    def origin(self) -> Origin:
        return Origin(self.scheme == "https", self.host, self.port)

    def target(self, path: str) -> str:
        """The request target for `path` under the base URL, keeping its query (api-version)."""
        return self.path + path + (f"?{self.query}" if self.query else "")

    def __str__(self) -> str:
        # no query: it may carry a credential, and this string goes into logs
        return f"{self.origin}{self.path}"


def model_call_error(failure: ExchangeFailed) -> ModelCallError:
    """The outcome a failed exchange gives the model call; its message is already secret-free."""
    if failure.cause is Cause.CANCELLED:
        return ModelCallError("cancelled", "model call cancelled")
    if not failure.sent:
        return ModelCallError("error", failure.message)
    if failure.cause is Cause.TIMED_OUT:
        return ModelCallError("timeout", failure.message)
    return ModelCallError("unknown", failure.message)


def read_error_body(exchange: Exchange) -> bytes:
    """Best effort: an error status is already definite, so a short body is fine."""
    try:
        return exchange.read_body(ERROR_BODY_LIMIT)
    except ExchangeFailed as failure:
        if failure.cause is Cause.CANCELLED:
            raise
        return b""


def http_error(status: int, detail: str, secrets: list[str]) -> ModelCallError:
    """A complete error answer: the provider refused the call (`error`, with its status)."""
    text = f"HTTP {status}"
    detail = scrub(" ".join(detail.split()), secrets)
    if detail:
        text += f": {detail}"
    return ModelCallError("error", text[:MESSAGE_LIMIT], status=status)


def scrub(text: str, secrets: list[str]) -> str:
    """`text` taken from the server with every secret replaced, before it goes into an error."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, "[redacted]")
    return text
