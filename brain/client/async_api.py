"""The asyncio client's connections: one httpx.AsyncClient per AsyncBrain, and its one way to call.

The sync client's transport (brain/client/transport.py) is hand-written on http.client; this is
its asyncio twin on httpx, with the same promises:

* every socket operation has a timeout (connect, ordinary request, turn, stream);
* a failure maps to the same exceptions, keeping "not sent" apart from "sent, outcome unknown":
  a failure to connect (or to get a connection from the pool) is `TransportError(maybe_applied=
  False)`; a failure once the request was being written is `maybe_applied=True`; a timeout is a
  `RequestTimeout` with the same rule;
* a broken keep-alive connection is retried once on a fresh one only when repeating the request
  is safe (a GET, or a request carrying an Idempotency-Key); no other request is ever resent;
* `aclose()` makes every later call raise ClientClosed and sends nothing about sessions.

Requests, their timeouts and parsers, key checks, error mapping and the "not sent" / "maybe
applied" rule are the core's (brain/client/routes.py), shared with the sync shell: only the I/O
differs.
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from typing import Any, TypeVar

import httpx

from brain.client.api import ApiBase
from brain.client.errors import ClientClosed, RequestTimeout, TransportError
from brain.client.routes import Call, Response, Timeouts, lost, may_resend

T = TypeVar("T")

KEEPALIVE_SECS = 4.0  # below gunicorn's 5 s keep-alive, as the sync transport

NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)
"""httpx failures raised before any byte of the request left: the request was not sent."""


class AsyncTransport:
    def __init__(self, base_url: str, default_headers: Mapping[str, str], timeouts: Timeouts, *,
                 max_idle: int = 4, ssl_context: ssl.SSLContext | None = None) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise ValueError(f"base_url must be http(s)://host[:port][/prefix], not {base_url!r}")
        self.base_url = base_url.rstrip("/")
        self.timeouts = timeouts
        # No limit on open connections: like the sync client, a long send never waits for
        # another request's connection (the cancelling send polls while its send is waiting).
        limits = httpx.Limits(max_connections=None, max_keepalive_connections=max_idle,
                              keepalive_expiry=KEEPALIVE_SECS)
        self._client = httpx.AsyncClient(headers=dict(default_headers), limits=limits,
                                         verify=ssl_context if ssl_context is not None else True,
                                         trust_env=False)
        self._closed = False

    @property
    def closed(self) -> bool:
        return self._closed

    def check_open(self) -> None:
        if self._closed:
            raise ClientClosed("the client is closed")

    async def aclose(self) -> None:
        """Idempotent. Later requests raise ClientClosed; nothing is sent to the server."""
        if self._closed:
            return
        self._closed = True
        await self._client.aclose()

    def url(self, path: str) -> str:
        return self.base_url + path

    def timeout(self, wait: float) -> httpx.Timeout:
        return httpx.Timeout(wait, connect=self.timeouts.connect, pool=self.timeouts.connect)

    def build(self, method: str, path: str, *, query: Mapping[str, Any] | None = None,
              body: bytes | None = None, headers: Mapping[str, str] | None = None,
              wait: float) -> httpx.Request:
        params = {k: v for k, v in (query or {}).items() if v is not None}
        return self._client.build_request(method, self.url(path), params=params, content=body,
                                          headers=dict(headers or {}),
                                          timeout=self.timeout(wait))

    async def request(self, method: str, path: str, *, query: Mapping[str, Any] | None = None,
                      body: bytes | None = None, headers: Mapping[str, str] | None = None,
                      timeout: float | None = None) -> Response:
        """One exchange; retried once on a fresh connection only when repeating it is safe."""
        self.check_open()
        key = (headers or {}).get("Idempotency-Key")
        wait = self.timeouts.request if timeout is None else timeout
        retried = False
        while True:
            request = self.build(method, path, query=query, body=body, headers=headers,
                                 wait=wait)
            try:
                answer = await self._client.send(request)
            except httpx.HTTPError as exc:
                error = self.failure(exc, f"{method} {path}", key, wait)
                if (not retried and isinstance(error, TransportError) and error.maybe_applied
                        and not isinstance(error, RequestTimeout)
                        and may_resend(method, headers or {})):
                    retried = True  # a kept-alive connection broke under us: reopen once
                    continue
                raise error from exc
            except RuntimeError:  # httpx: "Cannot send a request, as the client has been closed"
                if self._closed:
                    raise ClientClosed("the client was closed during the request") from None
                raise
            return Response(answer.status_code,
                            {k.lower(): v for k, v in answer.headers.items()}, answer.content)

    def failure(self, exc: httpx.HTTPError, what: str, key: str | None,
                wait: float) -> TransportError | ClientClosed:
        """The SDK's exception for an httpx failure (ClientClosed once aclose() ran)."""
        if self._closed:
            return ClientClosed("the client was closed during the request")
        return lost(what, phase="connect" if isinstance(exc, NOT_SENT) else "answer",
                    timed_out=isinstance(exc, httpx.TimeoutException), wait=wait, key=key,
                    cause=exc)

    async def open_stream(self, path: str, *, query: Mapping[str, Any] | None = None,
                          headers: Mapping[str, str] | None = None,
                          timeout: float | None = None) -> httpx.Response:
        """A streaming answer with its headers read; the caller checks the status and closes it."""
        self.check_open()
        wait = self.timeouts.stream if timeout is None else timeout
        request = self.build("GET", path, query=query, headers=headers, wait=wait)
        try:
            return await self._client.send(request, stream=True)
        except httpx.HTTPError as exc:
            error = self.failure(exc, f"GET {path} (stream)", None, wait)
            if isinstance(error, TransportError):
                error.maybe_applied = False  # a GET changes nothing
            raise error from exc
        except RuntimeError:
            if self._closed:
                raise ClientClosed("the client is closed") from None
            raise


class AsyncApi(ApiBase[AsyncTransport]):
    """What an AsyncBrain and its AsyncSession handles share: one transport, one way to call."""

    async def run(self, call: Call[T]) -> T:
        """Carry out `call`; any non-2xx answer raises the matching BrainAPIError."""
        data, headers = call.encode()
        answer = await self.transport.request(call.method, call.path, query=call.query,
                                              body=data, headers=headers,
                                              timeout=call.seconds(self.transport.timeouts))
        return call.answer(answer)
