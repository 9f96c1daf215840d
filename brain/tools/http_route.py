"""The `http` route: one POST to a Tool server, with the outcome its failure point implies.

Where a failure happens decides what Brain may claim about the effect. Until the last byte of
the request is written the server cannot have acted on it (a body shorter than its
Content-Length is no request), so failures there are `error`. After that Brain cannot know, so a
lost connection, a cut or unreadable answer is `unknown`. A complete HTTP error answer is the
server saying no: `error`. Cancellation and the deadline are noticed in every phase because all
blocking happens in short `poll` waits on a non-blocking socket; the socket is closed on the way
out whatever happened. Nothing here ever sends a request twice.

Standard library only: the socket work is done here so that every phase can be interrupted, and
the bytes that arrive are decoded by `http.client.HTTPResponse`. `https://` URLs get TLS with the
platform's trust store and hostname checking; a failed handshake is `error` (nothing was sent).
"""

from __future__ import annotations

import errno
import functools
import http.client
import io
import json
import select
import socket
import ssl
import threading
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from brain.environments.deadline import Deadline
from brain.tools.outcome import EventShapeError, ToolOutcome, check_events

RESPONSE_LIMIT = 16 << 20
SNIPPET_CHARS = 200
RECV_BYTES = 64 << 10


class _Stop(Exception):
    """Leave the exchange with this outcome; raised only inside this module."""

    def __init__(self, outcome: str, message: str) -> None:
        super().__init__(message)
        self.outcome = outcome
        self.message = message


@dataclass(frozen=True)
class Target:
    """Where to POST, parsed from the Tool's `url` (userinfo, if any, is dropped)."""

    tls: bool
    host: str
    port: int
    path: str

    @classmethod
    def parse(cls, url: Any) -> Target:
        if not isinstance(url, str):
            raise _Stop("error", "http tool has no url")
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise _Stop("error", "http tool url must be an http:// or https:// URL")
        tls = parts.scheme == "https"
        try:
            port = parts.port or (443 if tls else 80)
        except ValueError:
            raise _Stop("error", "http tool url has a bad port") from None
        path = parts.path or "/"
        if parts.query:
            path = f"{path}?{parts.query}"
        if not all(33 <= ord(ch) < 127 for ch in path + parts.hostname):
            raise _Stop("error", "http tool url must be percent-encoded ASCII")
        return cls(tls, parts.hostname, port, path)

    def host_header(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return host if self.port == (443 if self.tls else 80) else f"{host}:{self.port}"


def call_http_tool(
    url: Any, payload: dict[str, Any], deadline: Deadline, cancel: threading.Event
) -> ToolOutcome:
    """POST `payload` as JSON to `url` once and turn whatever happens into a ToolOutcome."""
    sock: socket.socket | None = None
    try:
        target = Target.parse(url)
        request = _encode(target, payload)
        sock = _connect(target, deadline, cancel)
        if target.tls:
            sock = _secure(sock, target, deadline, cancel)
        _send_all(sock, request, deadline, cancel)
        raw = _receive(sock, deadline, cancel)
        return _interpret(raw)
    except _Stop as stop:
        return ToolOutcome.failed(stop.outcome, stop.message)
    finally:
        if sock is not None:
            sock.close()


def _encode(target: Target, payload: dict[str, Any]) -> bytes:
    try:
        body = json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    except (TypeError, ValueError):
        raise _Stop("error", "tool input is not JSON") from None
    head = (
        f"POST {target.path} HTTP/1.1\r\n"
        f"Host: {target.host_header()}\r\n"
        "Content-Type: application/json\r\n"
        "Accept: application/json\r\n"
        f"Content-Length: {len(body)}\r\n"
        "Connection: close\r\n"
        "User-Agent: brain\r\n"
        "\r\n"
    )
    return head.encode("latin-1") + body


def _check(deadline: Deadline, cancel: threading.Event) -> None:
    if cancel.is_set():
        raise _Stop("cancelled", "tool call cancelled")
    if deadline.expired():
        raise _Stop("timeout", "tool call timed out")


def _wait(sock: socket.socket, events: int, deadline: Deadline, cancel: threading.Event) -> None:
    """Block until `sock` is ready for `events`, looking at cancel and deadline every poll."""
    poller = select.poll()  # poll, not select: descriptors may exceed FD_SETSIZE
    poller.register(sock, events | select.POLLERR | select.POLLHUP)
    while True:
        _check(deadline, cancel)
        if poller.poll(deadline.poll_interval() * 1000):
            return


def _connect(target: Target, deadline: Deadline, cancel: threading.Event) -> socket.socket:
    """A connected non-blocking socket; every failure here means nothing was delivered."""
    _check(deadline, cancel)
    where = f"{target.host}:{target.port}"
    try:
        infos = socket.getaddrinfo(target.host, target.port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        raise _Stop("error", f"cannot resolve {target.host}") from None
    reason = "no address"
    for family, kind, proto, _, address in infos:
        sock = socket.socket(family, kind, proto)
        try:
            sock.setblocking(False)
            code = sock.connect_ex(address)
            if code in (errno.EINPROGRESS, errno.EWOULDBLOCK, errno.EALREADY):
                _wait(sock, select.POLLOUT, deadline, cancel)
                code = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if code == 0:
                return sock
            reason = errno.errorcode.get(code, str(code))
        except _Stop:
            sock.close()
            raise
        except OSError as exc:
            reason = errno.errorcode.get(exc.errno or 0, type(exc).__name__)
        sock.close()
    raise _Stop("error", f"cannot connect to {where}: {reason}")


@functools.cache
def _tls_context() -> ssl.SSLContext:
    """The platform's trust store (SSL_CERT_FILE / SSL_CERT_DIR apply), verified hostnames.

    Built once: loading the trust store is slow and a context is safe to share between threads.
    """
    return ssl.create_default_context()


def _secure(
    sock: socket.socket, target: Target, deadline: Deadline, cancel: threading.Event
) -> ssl.SSLSocket:
    """The TLS handshake, polled like everything else; nothing of the request is sent yet."""
    try:
        tls = _tls_context().wrap_socket(
            sock, server_hostname=target.host, do_handshake_on_connect=False
        )
    except (ssl.SSLError, ValueError):
        sock.close()
        raise _Stop("error", "cannot start TLS") from None
    try:
        while True:
            try:
                tls.do_handshake()
                return tls
            except ssl.SSLWantReadError:
                _wait(tls, select.POLLIN, deadline, cancel)
            except ssl.SSLWantWriteError:
                _wait(tls, select.POLLOUT, deadline, cancel)
    except ssl.SSLCertVerificationError as exc:
        tls.close()
        reason = exc.verify_message or "certificate not trusted"
        raise _Stop("error", f"TLS handshake with {target.host} failed: {reason}") from None
    except OSError:
        tls.close()
        raise _Stop("error", f"TLS handshake with {target.host} failed") from None
    except _Stop:
        tls.close()
        raise


def _send_all(sock: socket.socket, data: bytes, deadline: Deadline, cancel: threading.Event):
    """Write the whole request; a failure before the last byte means it was never a request.

    A TLS write that wants more room is retried with the same bytes, as OpenSSL requires.
    """
    view = memoryview(data)
    while view:
        _wait(sock, select.POLLOUT, deadline, cancel)
        try:
            sent = sock.send(view)
        except (BlockingIOError, InterruptedError, ssl.SSLWantWriteError):
            continue
        except ssl.SSLWantReadError:
            _wait(sock, select.POLLIN, deadline, cancel)
            continue
        except OSError as exc:
            name = errno.errorcode.get(exc.errno or 0, type(exc).__name__)
            message = f"connection failed before the request was sent ({name})"
            raise _Stop("error", message) from None
        view = view[sent:]


def _receive(sock: socket.socket, deadline: Deadline, cancel: threading.Event) -> bytes:
    """Read until the answer is complete or the server closes; the request is out by now."""
    buffer = bytearray()
    while not _complete(buffer):
        _check(deadline, cancel)
        # TLS may hold decrypted bytes that the socket no longer shows as readable.
        if not (isinstance(sock, ssl.SSLSocket) and sock.pending()):
            _wait(sock, select.POLLIN, deadline, cancel)
        try:
            chunk = sock.recv(RECV_BYTES)
        except (BlockingIOError, InterruptedError, ssl.SSLWantReadError):
            continue
        except ssl.SSLWantWriteError:
            _wait(sock, select.POLLOUT, deadline, cancel)
            continue
        except (ssl.SSLZeroReturnError, ssl.SSLEOFError):
            # A close, with or without close_notify: framing (checked below) tells a complete
            # answer from a cut one, as for plain HTTP.
            chunk = b""
        except OSError:
            raise _Stop("unknown", "connection lost after the request was sent") from None
        if not chunk:
            break
        buffer += chunk
        if len(buffer) > RESPONSE_LIMIT:
            raise _Stop("unknown", f"tool answer exceeds {RESPONSE_LIMIT} bytes")
    if not buffer:
        raise _Stop("unknown", "connection closed after the request was sent, with no answer")
    return bytes(buffer)


def _complete(buffer: bytearray) -> bool:
    """Whether `buffer` already holds one whole final response (so no EOF is needed).

    Only framing is decided here; decoding is left to http.client. An answer whose framing this
    cannot read is treated as "read until the server closes", which http.client then judges.
    """
    start = 0
    while True:
        end = buffer.find(b"\r\n\r\n", start)
        if end < 0:
            return False
        lines = bytes(buffer[start:end]).split(b"\r\n")
        status_parts = lines[0].split(None, 2)
        try:
            status = int(status_parts[1])
        except (IndexError, ValueError):
            return False
        body_start = end + 4
        if 100 <= status < 200:  # an interim answer ("100 Continue"): the real one follows
            start = body_start
            continue
        break
    headers: dict[bytes, bytes] = {}
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        headers[name.strip().lower()] = value.strip().lower()
    body = memoryview(buffer)[body_start:]
    if b"chunked" in headers.get(b"transfer-encoding", b""):
        return _chunks_complete(body)
    if b"content-length" in headers:
        try:
            return len(body) >= int(headers[b"content-length"])
        except ValueError:
            return False
    return status in (204, 304)


def _chunks_complete(body: memoryview) -> bool:
    data = body.tobytes()
    pos = 0
    while True:
        line_end = data.find(b"\r\n", pos)
        if line_end < 0:
            return False
        try:
            size = int(data[pos:line_end].split(b";")[0], 16)
        except ValueError:
            return False
        pos = line_end + 2
        if size == 0:
            rest = data[pos:]
            return rest.startswith(b"\r\n") or b"\r\n\r\n" in rest
        pos += size + 2
        if pos > len(data):
            return False


class _Replay:
    """Just enough of a socket for http.client.HTTPResponse to parse bytes already read."""

    def __init__(self, data: bytes) -> None:
        self._data = data

    def makefile(self, mode: str, *args: Any, **kwargs: Any) -> io.BytesIO:
        return io.BytesIO(self._data)


def _interpret(raw: bytes) -> ToolOutcome:
    """Judge a received answer: decode the HTTP, then the JSON result inside it."""
    response = http.client.HTTPResponse(_Replay(raw), method="POST")  # type: ignore[arg-type]
    try:
        response.begin()
        body = response.read()
    except (http.client.HTTPException, ValueError, OSError):
        raise _Stop("unknown", "tool answer was cut short or is not HTTP") from None
    status = response.status
    if status >= 300:
        detail = " (redirects are not followed)" if status < 400 else ""
        snippet = _snippet(body)
        message = f"tool server answered HTTP {status}{detail}"
        raise _Stop("error", f"{message}: {snippet}" if snippet else message)
    try:
        answer = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        message = f"tool answered HTTP {status} with a body that is not JSON"
        raise _Stop("unknown", message) from None
    if not isinstance(answer, dict) or "content" not in answer:
        raise _Stop("unknown", "tool answer has no content")
    is_error = answer.get("is_error", False)
    if not isinstance(is_error, bool):
        raise _Stop("unknown", "tool answer's is_error is not a boolean")
    try:
        events = check_events(answer.get("events", []))
    except EventShapeError as exc:
        raise _Stop("unknown", f"tool answer's {exc}") from None
    return ToolOutcome.ok(answer["content"], is_error=is_error, events=events)


def _snippet(body: bytes) -> str:
    """A short printable excerpt of an error body, to help whoever reads the transcript."""
    text = body[: SNIPPET_CHARS * 4].decode("utf-8", errors="replace")
    text = "".join(ch if ch.isprintable() else " " for ch in text).strip()
    return text[:SNIPPET_CHARS]
