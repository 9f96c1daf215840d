"""The trivial Python Agentloop of tools/bench/python_agentloop.py: no guest call at all."""

from brain_guest import Turn


def activate(turn: Turn) -> str:
    return "pong"
