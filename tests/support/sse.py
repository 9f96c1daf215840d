"""A small real SSE client over a raw socket, with timeouts on every read."""

from __future__ import annotations

import socket
import time
from dataclasses import dataclass
from urllib.parse import urlencode


@dataclass
class SseFrame:
    event: str | None
    data: str | None
    id: str | None
    comment: bool = False


class SseClient:
    def __init__(self, host: str, port: int, path: str, token: str, *,
                 params: dict | None = None, last_event_id: str | None = None,
                 timeout: float = 30.0, recv_buffer: int | None = None) -> None:
        query = f"?{urlencode(params)}" if params else ""
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if recv_buffer is not None:
            # Before connect, so the advertised window matches for the whole connection.
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, recv_buffer)
        self.sock.settimeout(timeout)
        self.sock.connect((host, port))
        headers = [f"GET {path}{query} HTTP/1.1", f"Host: {host}:{port}",
                   "Accept: text/event-stream", f"Authorization: Bearer {token}"]
        if last_event_id is not None:
            headers.append(f"Last-Event-ID: {last_event_id}")
        self.sock.sendall(("\r\n".join(headers) + "\r\n\r\n").encode())
        self.buffer = b""
        self.status, self.headers = self._read_head()
        self.chunked = self.headers.get("transfer-encoding", "").lower() == "chunked"
        self.body = bytearray()
        self._scanned = 0  # body bytes already searched for a frame end
        self.closed = False

    def _recv(self) -> bytes:
        data = self.sock.recv(1 << 20)
        if not data:
            self.closed = True
        return data

    def _read_head(self) -> tuple[int, dict[str, str]]:
        while b"\r\n\r\n" not in self.buffer:
            data = self._recv()
            if not data:
                raise ConnectionError("closed before headers")
            self.buffer += data
        head, self.buffer = self.buffer.split(b"\r\n\r\n", 1)
        lines = head.decode().split("\r\n")
        status = int(lines[0].split()[1])
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        return status, headers

    def _fill_body(self) -> bool:
        """Move decoded body bytes from the socket buffer; False when the stream ended."""
        if not self.chunked:
            self.body += self.buffer
            self.buffer = b""
            data = self._recv()
            self.body += data
            return bool(data)
        while True:
            if b"\r\n" in self.buffer:
                size_line, rest = self.buffer.split(b"\r\n", 1)
                size = int(size_line.split(b";")[0], 16)
                if size == 0:
                    self.closed = True
                    return False
                if len(rest) >= size + 2:
                    self.body += rest[:size]
                    self.buffer = rest[size + 2:]
                    return True
            data = self._recv()
            if not data:
                return False
            self.buffer += data
            if b"\r\n" not in self.buffer:
                continue

    def _frame_end(self) -> int:
        end = self.body.find(b"\n\n", max(0, self._scanned - 1))
        self._scanned = len(self.body) if end < 0 else 0
        return end

    def next_frame(self, timeout: float = 30.0) -> SseFrame | None:
        """The next frame (comments included), or None when the stream has ended."""
        deadline = time.monotonic() + timeout
        end = self._frame_end()
        while end < 0:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("no SSE frame in time")
            self.sock.settimeout(remaining)
            alive = self._fill_body()
            end = self._frame_end()
            if not alive and end < 0:
                return None
        raw = bytes(self.body[:end])
        del self.body[:end + 2]
        frame = SseFrame(None, None, None)
        lines = raw.decode().split("\n")
        if all(line.startswith(":") for line in lines):
            frame.comment = True
            return frame
        data_lines = []
        for line in lines:
            name, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if name == "event":
                frame.event = value
            elif name == "data":
                data_lines.append(value)
            elif name == "id":
                frame.id = value
        frame.data = "\n".join(data_lines) if data_lines else None
        return frame

    def events(self, count: int, timeout: float = 30.0) -> list[SseFrame]:
        """The next `count` non-comment frames."""
        frames: list[SseFrame] = []
        deadline = time.monotonic() + timeout
        while len(frames) < count:
            frame = self.next_frame(max(0.01, deadline - time.monotonic()))
            if frame is None:
                break
            if not frame.comment:
                frames.append(frame)
        return frames

    def close(self) -> None:
        self.sock.close()
