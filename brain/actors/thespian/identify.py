"""Describe a message for Thespian's debug log only when the log line is written.

Thespian 4.0.1 logs every send and every receive at DEBUG (`thesplog('Attempting intent %s',
intent.identify(), level=logging.DEBUG)`, and the same for the transmit and for the envelope an
actor gets). The log call formats its arguments only when the line passes the log threshold,
but `identify()` is called before that, and it renders the whole message with `str()` (a
dataclass repr, nested dicts included) to keep its first 75 characters. So every message costs
three full renderings that nobody reads: with Brain's other patches, about a sixth of the CPU of
handing an `EffectDone` to another actor (tools/bench/actor_messages.py).

So, in actor processes and web workers, `TransmitIntent.identify` and `ReceiveEnvelope.identify`
return a `Description`: a small object whose `str()` is exactly what Thespian's `identify()`
returned, computed at that moment. Every caller in Thespian 4.0.1 passes it to `%s`-formatting
(thesplog, logging, `TransmitIntent.__str__`), so a line that is written reads as before and a
line that is not written renders nothing. `ReceiveEnvelope.__str__`, which returned
`identify()` itself, returns the rendered text (docs/thespian-patches.md, 7).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from thespian.system import transport

from brain.actors.thespian.fit import patch_once


class Description:
    """What `identify()` returns once patched: Thespian's description, rendered by `str()`."""

    __slots__ = ("_describe", "_subject")

    def __init__(self, describe: Callable[[Any], str], subject: Any) -> None:
        self._describe = describe
        self._subject = subject

    def __str__(self) -> str:
        return self._describe(self._subject)

    __repr__ = __str__


def _described_later(describe: Callable[[Any], str]) -> Callable[[Any], Description]:
    # the fit check reads the replaced signature (brain/actors/thespian/fit.py)
    @functools.wraps(describe)
    def identify(subject: Any) -> Description:
        return Description(describe, subject)

    return identify


def _rendered(replaced: Callable[[Any], str], describe: Callable[[Any], str]
              ) -> Callable[[Any], str]:
    @functools.wraps(replaced)
    def __str__(subject: Any) -> str:
        return describe(subject)

    return __str__


@patch_once("thespian_identify")
def describe_messages_lazily() -> None:
    """Patch Thespian's transport as the module docstring says."""
    intent, envelope = transport.TransmitIntent, transport.ReceiveEnvelope
    describe_envelope = envelope.identify
    intent.identify = _described_later(intent.identify)  # type: ignore[method-assign,assignment]
    envelope.identify = _described_later(describe_envelope)  # type: ignore[method-assign,assignment]
    envelope.__str__ = _rendered(envelope.__str__, describe_envelope)  # type: ignore[method-assign]
