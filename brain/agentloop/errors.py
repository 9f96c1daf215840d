"""The one exception an activation raises, with a turn error code from the contract."""

from __future__ import annotations

AGENTLOOP_ERROR = "agentloop_error"
TURN_TIMEOUT = "turn_timeout"
CANCELLED = "cancelled"


class AgentloopError(Exception):
    """An activation that could not produce a result.

    `code` is `agentloop_error` (the loop trapped, broke the ABI, ran out of memory, returned
    something that is not a result), `turn_timeout` (the deadline passed) or `cancelled` (the
    host stopped it through its `ActivationStopper`). `message` is
    written for the loop's author: it names what the guest did and where.
    """

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message

    def __reduce__(self) -> tuple[type[AgentloopError], tuple[str, str]]:
        # Pickles across process boundaries (actors) with both fields intact.
        return (type(self), (self.code, self.message))


def loop_error(message: str) -> AgentloopError:
    return AgentloopError(AGENTLOOP_ERROR, message)


def timeout_error(message: str) -> AgentloopError:
    return AgentloopError(TURN_TIMEOUT, message)


def cancelled_error(message: str) -> AgentloopError:
    return AgentloopError(CANCELLED, message)
