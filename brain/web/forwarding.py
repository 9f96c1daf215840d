"""A request about another member's session is answered by that member's own front end.

In a convention (docs/several-hosts.md) a session's journal, its session tokens, its
idempotency claims and its live commit hints are all on the disk of the member that holds it,
and reads must come from that journal. So a front end that gets a request under
`/v1/sessions/{id}` for a session another member holds passes the whole request (method, path,
query, headers, body) to that member's front end, whose URL the member advertises as a
Thespian capability, and relays the answer, streaming it for SSE. It does so first thing,
before authentication (the owner checks the token) and before any idempotency claim (the
owner keeps it, once). A member that is down answers 503 `unavailable` with `Retry-After`.
"""

from __future__ import annotations

import http.client
from collections.abc import Iterator
from urllib.parse import urlsplit

import falcon

from brain.web.bodies import body_stream
from brain.web.members import Convention, Member, unavailable

SESSION_PREFIX = "/v1/sessions/"
FORWARDED_HEADER = "X-Brain-Forwarded-By"
CONNECT_TIMEOUT_SECS = 2.0
STREAM_CHUNK_BYTES = 16 * 1024
HOP_BY_HOP = frozenset({"connection", "keep-alive", "transfer-encoding", "te", "trailer",
                        "upgrade", "proxy-authorization", "proxy-authenticate", "host",
                        "content-length", "date", "server"})


def session_in_path(path: str) -> str | None:
    """The `{id}` of `/v1/sessions/{id}` and `/v1/sessions/{id}/...`; None for other routes."""
    if not path.startswith(SESSION_PREFIX):
        return None
    session_id = path[len(SESSION_PREFIX):].split("/", 1)[0]
    return session_id or None


class ForwardingMiddleware:
    def __init__(self, convention: Convention) -> None:
        self.convention = convention

    def process_request(self, req: falcon.Request, resp: falcon.Response) -> None:
        session_id = session_in_path(req.path)
        if session_id is None:
            return
        owner = self.convention.owner(session_id)  # raises `unavailable` for a member down
        if owner is None:
            return
        if req.get_header(FORWARDED_HEADER):
            # Members disagree about who holds it (a misconfigured name): never loop.
            raise unavailable(owner.name)
        forward(req, resp, owner, self.convention.me)
        resp.complete = True


def forward(req: falcon.Request, resp: falcon.Response, owner: Member, me: str) -> None:
    """Send `req` to `owner`'s front end and make its answer this response."""
    target = urlsplit(owner.url)
    connection_class = (http.client.HTTPSConnection if target.scheme == "https"
                        else http.client.HTTPConnection)
    connection = connection_class(target.hostname or "", target.port,
                                  timeout=CONNECT_TIMEOUT_SECS)
    stream = body_stream(req)  # a chunked body too: it is sent on with a Content-Length
    body = stream.read() if stream is not None else b""
    headers = {name: value for name, value in req.headers.items()
               if name.lower() not in HOP_BY_HOP}
    headers[FORWARDED_HEADER] = me
    try:
        connection.connect()
        connection.sock.settimeout(None)  # a synchronous turn or a stream may last long
        connection.request(req.method, req.relative_uri, body=body, headers=headers)
        answer = connection.getresponse()
    except (OSError, http.client.HTTPException):
        connection.close()
        raise unavailable(owner.name) from None
    resp.status = answer.status
    for name, value in answer.getheaders():
        if name.lower() not in HOP_BY_HOP:
            resp.set_header(name, value)
    if (answer.getheader("Content-Type") or "").startswith("text/event-stream"):
        resp.stream = relay(answer, connection)
        return
    try:
        resp.data = answer.read()
    except (OSError, http.client.HTTPException):
        raise unavailable(owner.name) from None
    finally:
        connection.close()


def relay(answer: http.client.HTTPResponse, connection: http.client.HTTPConnection
          ) -> Iterator[bytes]:
    """The owner's event stream, chunk by chunk as it arrives; it ends when the owner's does."""
    try:
        while True:
            chunk = answer.read1(STREAM_CHUNK_BYTES)
            if not chunk:
                return
            yield chunk
    except (OSError, http.client.HTTPException):
        return
    finally:
        connection.close()

