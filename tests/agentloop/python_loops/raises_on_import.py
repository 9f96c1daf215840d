"""A test Agentloop whose import fails: the build must report it."""

from brain_guest import Turn

raise RuntimeError("configuration missing at import")


def activate(turn: Turn) -> str:
    return "never"
