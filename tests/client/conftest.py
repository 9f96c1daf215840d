"""One real `brain serve` for the client SDK tests, and a fresh client per test.

The server is shared by the package's tests to keep their runtime short; every test creates its
own sessions, so none depends on another's state. Models: `scripted` (the default, instant
echo), `slow` (20 s before answering: cancelled long before that), `stream` (four deltas) and
`hostcaller` / `shellcaller` (call the host Tool `hosted` / the host Environment `remote`'s exec
through `remote_shell`, then answer with the tool results) and `fanout` (asks for FANOUT calls
of `hosted` in one answer, which a turn runs concurrently).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from typing import Any

import pytest

from brain.client import Brain
from tests.support.server import BrainServer, serving

FANOUT = 20

MODELS = """
[models.slow]
provider = "scripted"
script = [ { text = "too late", delay_ms = 20000 } ]

[models.stream]
provider = "scripted"
script = [ { text = "one two three four", stream_chunks = 4, chunk_delay_ms = 150 } ]

[models.hostcaller]
provider = "scripted"
script = [ { tool_calls = [ { name = "hosted", input = { word = "hi" } } ] }, { delay_ms = 0 } ]

[models.fanout]
provider = "scripted"
script = [ { tool_calls = [ FANOUT_CALLS ] }, { delay_ms = 0 } ]

[models.shellcaller]
provider = "scripted"
script = [ { tool_calls = [ { name = "remote_shell", input = { argv = ["uname"] } } ] },
           { delay_ms = 0 } ]

[tools.hosted]
route = "host"
description = "Served by a HostServer of the test process."

[environments.remote]
kind = "host"

[tools.remote_shell]
route = "environment"
environment = "remote"
op = "exec"
description = "Run a command on the host."
""".replace("FANOUT_CALLS", ", ".join(f'{{ name = "hosted", input = {{ n = {n} }} }}'
                                      for n in range(FANOUT)))


@pytest.fixture(scope="package")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrainServer]:
    yield from serving(tmp_path_factory.mktemp("client"), MODELS, {"BRAIN_MAX_TURN_SECS": "30",
                                                                "BRAIN_MAX_TOOL_SECS": "25"})


@pytest.fixture
def brain(server: BrainServer) -> Iterator[Brain]:
    client = Brain(server.url, server.token, timeout=20, turn_timeout=40, stream_timeout=20)
    try:
        yield client
    finally:
        client.close()


def collect(items: Iterable[Any], *, until: str | None = None, timeout: float = 20.0) -> list:
    """Iterate `items` in a thread until an Event of kind `until` (or the end), within timeout.

    A stream that never ends would otherwise hang the test; on timeout it is closed.
    """
    seen: list[Any] = []
    failure: list[BaseException] = []

    def run() -> None:
        try:
            for item in items:
                seen.append(item)
                if until is not None and getattr(item, "kind", None) == until:
                    return
        except BaseException as exc:
            failure.append(exc)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        close = getattr(items, "close", None)
        if close is not None:
            close()
        raise TimeoutError(f"stream did not reach {until or 'its end'} within {timeout} s: "
                           f"{[getattr(i, 'kind', i) for i in seen]}")
    if failure:
        raise failure[0]
    return seen
