"""brain/metrics.py and the collector of brain/web/prometheus.py, without a server: deltas merge
into a state whose snapshot prometheus_client renders and parses back; latencies pair a
terminal record with its start."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from brain.metrics import Latencies, MetricBatch, MetricState, epoch_ms
from brain.web.prometheus import ActorCollector


def rendered(state: MetricState, gauges: dict[str, float]) -> dict[tuple, float]:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(ActorCollector(state.snapshot(), gauges))  # type: ignore[arg-type]
    text = generate_latest(registry).decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def test_deltas_merge_and_render() -> None:
    state = MetricState()
    for _ in range(2):
        batch = MetricBatch()
        batch.inc("brain_turns_total", status="ended", code="")
        batch.observe("brain_journal_commit_seconds", 0.0003)
        batch.observe("brain_effect_duration_seconds", 2.0, kind="tool_call")
        state.merge(*batch.take())
    samples = rendered(state, {"brain_turns_suspended": 3})
    assert samples[("brain_turns_total", (("code", ""), ("status", "ended")))] == 2
    assert samples[("brain_journal_commit_seconds_count", ())] == 2
    assert samples[("brain_journal_commit_seconds_bucket", (("le", "0.00025"),))] == 0
    assert samples[("brain_journal_commit_seconds_bucket", (("le", "0.0005"),))] == 2
    assert samples[("brain_effect_duration_seconds_sum", (("kind", "tool_call"),))] == 4.0
    assert samples[("brain_admission_wait_seconds_count", ())] == 0  # shown before any
    assert samples[("brain_turns_suspended", ())] == 3
    assert samples[("brain_session_actors_open", ())] == 0


def test_latencies_pair_terminals_with_their_starts() -> None:
    latencies, batch = Latencies(), MetricBatch()
    latencies.note([{"seq": 4, "kind": "turn_started", "at": 1_000},
                    {"seq": 6, "kind": "model_call_started", "at": 1_100}])
    for record in ({"seq": 7, "kind": "model_call_ended", "at": 1_350, "started": 6},
                   {"seq": 8, "kind": "tool_call_ended", "at": 1_400, "started": 5},  # unseen
                   {"seq": 9, "kind": "turn_ended", "at": 2_500, "started": 4}):
        latencies.observe(batch, record)
    _, observations = batch.take()
    assert observations == {
        ("brain_effect_duration_seconds", (("kind", "model_call"),)): [0.25],
        ("brain_turn_duration_seconds", (("status", "ended"),)): [1.5],
    }
    assert latencies.starts == {}


def test_event_times_are_epoch_ms() -> None:
    assert epoch_ms("1970-01-01T00:00:01.234Z") == 1234
