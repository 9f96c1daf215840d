"""Read a server's `GET /metrics` the way Prometheus would: with prometheus_client's own parser.

Shared by the tests that count what a server did (turns, journal opens, effects) through its
metrics rather than through its internals.
"""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from tests.support.server import BrainServer

Samples = dict[tuple[str, frozenset], float]


def scrape(s: BrainServer) -> tuple[dict[str, str], Samples]:
    """Each metric family's type, and every sample by (name, labels)."""
    resp = s.request("GET", "/metrics")
    assert resp.status_code == 200
    assert resp.headers["Content-Type"].startswith("text/plain")
    types: dict[str, str] = {}
    samples: Samples = {}
    for family in text_string_to_metric_families(resp.text):
        types[family.name] = family.type
        for sample in family.samples:
            samples[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return types, samples


def value(samples: Samples, name: str, **labels: str) -> float | None:
    """The sample `name` with exactly these labels, or None when the server has none."""
    return samples.get((name, frozenset(labels.items())))
