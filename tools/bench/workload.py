"""The scripted workload both arms of tools/bench/compare.py run: one definition, two servers.

A text turn is one model call answering ANSWER (512 bytes). A tool turn is TOOL_ROUNDS model
calls of CALLS_PER_ROUND parallel `echo` calls each, then the same text answer. Brain gets it as
`[models.*]` scripted models (brain_config); the LangGraph peer (tools/bench/peer.py) scripts its
chat model from the same constants, so the two arms cannot drift apart.
"""

from __future__ import annotations

ANSWER = ("Brain bench answer. " * 26)[:511] + "."
assert len(ANSWER.encode()) == 512
TOOL_ROUNDS = 2
CALLS_PER_ROUND = 4
TOOL_CALLS_PER_TURN = TOOL_ROUNDS * CALLS_PER_ROUND

TEXT_MODEL = "bench_text"  # one 512-byte answer
TOOL_MODEL = "bench_tools"  # 2 rounds x 4 echo calls, then the 512-byte answer
SLOW_MODEL = "bench_slow"  # the 512-byte answer after BURST_MODEL_DELAY_MS
BURST_MODEL_DELAY_MS = 5000


def echo_input(round_index: int, call_index: int) -> dict[str, int]:
    """The input of one scripted `echo` call: numbered 1..TOOL_CALLS_PER_TURN across the turn."""
    return {"i": round_index * CALLS_PER_ROUND + call_index + 1}


def _toml_round(round_index: int) -> str:
    calls = ", ".join(
        f'{{ name = "echo", input = {{ i = {echo_input(round_index, k)["i"]} }} }}'
        for k in range(CALLS_PER_ROUND)
    )
    return f"  {{ tool_calls = [ {calls} ] }},"


def brain_config(slow_delay_ms: int = BURST_MODEL_DELAY_MS) -> str:
    """A BRAIN_CONFIG file's text naming the three scripted models of the workload."""
    rounds = "\n".join(_toml_round(r) for r in range(TOOL_ROUNDS))
    return (
        f'[models.{TEXT_MODEL}]\nprovider = "scripted"\nscript = [ {{ text = "{ANSWER}" }} ]\n\n'
        f'[models.{TOOL_MODEL}]\nprovider = "scripted"\nscript = [\n{rounds}\n'
        f'  {{ text = "{ANSWER}" }},\n]\n\n'
        f'[models.{SLOW_MODEL}]\nprovider = "scripted"\n'
        f'script = [ {{ text = "{ANSWER}", delay_ms = {slow_delay_ms} }} ]\n'
    )
