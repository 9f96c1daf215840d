"""The HTTP floor of a burst: the same server answering N `GET /healthz` at once.

A submit's 202 is answered by a web worker alone (brain/web/admission.py), so the slowest 202
of N submits fired at once can be no faster than the slowest answer the same workers give to N
requests that do nothing at all: a connect, a parse, a route, a tiny answer, a close. This
fires exactly that, with the client that fired the submits (tools.bench.burst.fire: one
selector loop, every connect started before any answer is read), at the same server once its
turns have ended, and reads the web workers' CPU around each burst. Its numbers are the
baseline a submit burst is judged against in the same run: what is left above them is
Brain's own work (the journal's lock, open and fdatasync, the registry's hand-over).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tools.bench.common import percentile
from tools.bench.fleet_measure import web_worker_cpu_seconds

SETTLE_SECS = 1.0  # after the turns ended: the workers' last polls and hints die down


@dataclass(frozen=True)
class BurstCost:
    """N requests fired at once: how many were answered, how fast, and the web workers' CPU."""

    answered: int
    p50_secs: float
    max_secs: float
    web_cpu_secs: float

    def web_cpu_ms_each(self) -> float:
        return self.web_cpu_secs / self.answered * 1000 if self.answered else float("nan")

    def as_dict(self) -> dict[str, float]:
        return {"answered": self.answered, "p50_secs": self.p50_secs, "max_secs": self.max_secs,
                "web_cpu_ms_each": self.web_cpu_ms_each()}


def burst_cost(answers: list[Any], web_cpu_secs: float, ok_status: int) -> BurstCost:
    times = [a.seconds for a in answers if a.status == ok_status]
    return BurstCost(len(times), percentile(times, 0.5), max(times, default=float("nan")),
                     web_cpu_secs)


def healthz_request(port: int, token: str, sid: str, text: str) -> bytes:
    """What the floor fires in place of a submit: no body, no credentials, no session."""
    return (f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            "Connection: close\r\n\r\n").encode()


def fire_measured(server: Any, sids: list[str], ok_status: int,
                  make_request: Callable[[int, str, str, str], bytes] | None = None
                  ) -> tuple[list[Any], BurstCost]:
    """One request per entry of `sids` at once against `server` (tools.bench.burst.fire: a
    submit each unless `make_request` says otherwise); the answers, and the cost of those
    answered `ok_status` with the web workers' CPU read around the burst."""
    from tools.bench.burst import fire

    pgrp = server.proc.pid
    before = web_worker_cpu_seconds(pgrp)
    answers, _ = fire(server.port, server.token, sids, make_request)
    return answers, burst_cost(answers, web_worker_cpu_seconds(pgrp) - before, ok_status)


def http_floor(server: Any, count: int) -> BurstCost:
    """`count` GET /healthz at once against `server`, as the submits were fired."""
    time.sleep(SETTLE_SECS)
    return fire_measured(server, [""] * count, 200, healthz_request)[1]
