"""A command run on a real pseudo-terminal: what a user's typing and Ctrl-C reach.

The child gets the pty as its controlling terminal (so `stdin.isatty()` is true and a typed
Ctrl-C, byte 0x03, becomes the kernel's SIGINT for its foreground process group), and
everything it writes is collected by a reader thread so a test can wait for text to appear.
"""

from __future__ import annotations

import fcntl
import os
import pty
import signal
import subprocess
import termios
import threading
import time

CTRL_C = b"\x03"


class Terminal:
    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        master, slave = pty.openpty()
        self.master = master
        self.proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env,
                                     preexec_fn=_take_terminal, close_fds=True)
        os.close(slave)
        self._text = b""
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while True:
            try:
                chunk = os.read(self.master, 4096)
            except OSError:  # EIO: the child closed the terminal
                return
            if not chunk:
                return
            with self._lock:
                self._text += chunk

    @property
    def text(self) -> str:
        with self._lock:
            return self._text.decode("utf-8", "replace").replace("\r\n", "\n")

    def expect(self, needle: str, timeout: float = 30.0, start: int = 0) -> int:
        """Wait until `needle` appears after offset `start`; its end offset in `text`."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = self.text.find(needle, start)
            if found >= 0:
                return found + len(needle)
            time.sleep(0.02)
        raise AssertionError(f"{needle!r} did not appear within {timeout}s; terminal:\n"
                             f"{self.text}")

    def type(self, data: bytes) -> None:
        os.write(self.master, data)

    def wait(self, timeout: float = 30.0) -> int:
        return self.proc.wait(timeout)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)
        self._reader.join(5)
        os.close(self.master)


def _take_terminal() -> None:
    os.setsid()
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)
    # As a shell on a terminal starts a command: a suite started in the background of a
    # non-interactive shell inherits SIGINT ignored, and Python keeps an ignored SIGINT.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
