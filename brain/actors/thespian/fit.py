"""Refuse to patch a Thespian that Brain's fixes were not written for.

Nine modules replace private parts of Thespian 4.0.1 (docs/thespian-patches.md):
brain/actors/thespian/reuse.py, brain/actors/thespian/poll.py, brain/actors/thespian/receive.py,
brain/actors/thespian/idle.py,
brain/actors/thespian/wakeups.py, brain/actors/thespian/forwarded_creates.py,
brain/actors/thespian/identify.py, brain/actors/thespian/exits.py and
brain/actors/thespian/auth.py; and
brain/web/reply_inbox.py sends through two private methods of Thespian's external endpoint
(checked here under the name `reply_inbox`, like a patch). A private part can change in any
release; a patch applied to a changed one would fail at the first message, or worse, quietly
undo the fix. So before anything is patched, the installed Thespian must be 4.0.1 and every
attribute a patch replaces or relies on must still be there with the parameters it had.
Otherwise `ThespianMismatch` says, in one line, which patch and which attribute; `brain serve`,
`brain actors`, `brain web` and the boot process print that line and exit instead of starting.

This module imports no Thespian module at its top and reports a module that does not import as
a mismatch, so the check itself never ends in a traceback.
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import inspect
from collections.abc import Callable, Iterable
from dataclasses import dataclass

THESPIAN_VERSION = "4.0.1"
DOCS = "docs/thespian-patches.md"

TRANSPORT = "thespian.system.transport.TCPTransport"
CONVENTION = "thespian.system.admin.convention"
STREAM_BUFFER = "thespian.system.transport.streamBuffer"


class ThespianMismatch(Exception):
    """The installed Thespian is not the one a patch was written for; the message is one line."""


@dataclass(frozen=True)
class Relied:
    """An attribute of a Thespian module that a patch replaces or relies on.

    `parameters`: the names of its parameters in Thespian 4.0.1, or None for an attribute that
    is not called (a class or a module), which only has to exist.
    """

    module: str
    attribute: str
    parameters: tuple[str, ...] | None = None

    @property
    def name(self) -> str:
        return f"{self.module}.{self.attribute}"


PATCHES: dict[str, tuple[Relied, ...]] = {
    "thespian_reuse": (
        Relied(TRANSPORT, "TCPTransport._next_XMIT_1", ("self", "intent")),
        Relied(TRANSPORT, "TCPTransport._next_XMIT_6", ("self", "intent")),
        Relied(TRANSPORT, "TCPTransport._finishIntent", ("self", "intent", "status")),
        Relied(TRANSPORT, "TCPTransport._nextTransmitStep", ("self", "intent")),
        Relied(TRANSPORT, "TCPTransport._XMITStepSendConnect"),
        Relied(TRANSPORT, "TCPTransport._XMITStepRetry"),
        Relied(TRANSPORT, "opsKey", ("addr",)),
        Relied(TRANSPORT, "_safeSocketShutdown", ("sock",)),
    ),
    "thespian_select": (
        Relied(TRANSPORT, "selectors"),
        Relied(TRANSPORT, "TCPTransport._runWithExpiry", ("self", "incomingHandler")),
        Relied(TRANSPORT, "TCPTransport._check_fd", ("fd",)),
    ),
    "thespian_receive": (
        Relied(TRANSPORT, "TCPIncoming_Common.remainingSize", ("self",)),
        Relied(TRANSPORT, "TCPIncoming_Common.__init__", ("self", "rmtAddr", "baseSock",
                                                          "rcvBuf")),
        Relied("thespian.system.transport.streamBuffer", "ReceiveBuffer.__init__",
               ("self", "serializer")),
    ),
    "thespian_idle": (
        Relied("thespian.system.transport.IPBase", "IPActorAddress.__hash__", ("self",)),
        Relied("thespian.system.transport.IPBase", "IPActorAddress.__getstate__", ("self",)),
        Relied("thespian.system.transport.IPBase", "IPActorAddress.socketArgs"),
        Relied("thespian.system.transport.IPBase", "IPActorAddress.connectArgs"),
        Relied(TRANSPORT, "IdleSocket.expired", ("self",)),
        Relied(TRANSPORT, "IdleSocket.__init__", ("self", "socket", "addr")),
        Relied("thespian.system.timing", "currentTime"),
    ),
    "thespian_wakeups": (
        Relied("thespian.system.transport.wakeupTransportBase",
               "wakeupTransportBase.addWakeup", ("self", "timePeriod", "payload")),
        Relied("thespian.system.transport.wakeupTransportBase", "wakeupTransportBase.__init__",
               ("self", "args", "kw")),
        Relied("thespian.system.timing", "ExpirationTimer.__lt__", ("self", "o")),
    ),
    "thespian_convention": (
        Relied(CONVENTION, "ConventioneerAdmin._not_compatible", ("self", "createActorEnvelope")),
        Relied(CONVENTION, "ConventioneerAdmin._pending_send_failed", ("self", "result",
                                                                        "intent")),
        Relied(CONVENTION, "ConventioneerAdmin._sendPendingActorResponse",
               ("self", "requestEnvelope", "actualAddress", "errorCode", "errorStr")),
    ),
    "thespian_identify": (
        Relied("thespian.system.transport", "TransmitIntent.identify", ("self",)),
        Relied("thespian.system.transport", "ReceiveEnvelope.identify", ("self",)),
        Relied("thespian.system.transport", "ReceiveEnvelope.__str__", ("self",)),
    ),
    "thespian_exits": (
        Relied("thespian.system.multiprocCommon", "MultiProcReplicator.childDied", ("self",)),
        Relied("thespian.system.multiprocCommon", "ChildInfo.__init__",
               ("self", "childAddr", "childClass", "childProc", "childNum")),
        Relied("thespian.actors", "ChildActorExited.__init__", ("self", "exitedChildAddress")),
    ),
    "thespian_auth": (
        Relied(TRANSPORT, "serializer"),  # the module-wide pickle every frame goes through
        Relied(TRANSPORT, "ackMsg"),
        Relied(TRANSPORT, "ackDataErrMsg"),
        Relied(TRANSPORT, "TCPTransport.serializer", ("self", "intent")),
        Relied(TRANSPORT, "TCPTransport._addedDataToIncoming",
               ("self", "inc", "skipFinish", "has_exclusive_flag")),
        Relied(TRANSPORT, "TCPTransport._next_XMIT_3", ("self", "intent")),
        Relied(TRANSPORT, "TCPTransport._check_XMIT_4_done", ("self", "intent", "rcv")),
        Relied(TRANSPORT, "TCPIncoming_Common.__init__", ("self", "rmtAddr", "baseSock",
                                                          "rcvBuf")),
        Relied(TRANSPORT, "TCPIncoming_Common.receivedAllData", ("self",)),
        Relied(STREAM_BUFFER, "ReceiveBuffer.__init__", ("self", "serializer")),
        Relied(STREAM_BUFFER, "ReceiveBuffer.completed", ("self",)),
        Relied(STREAM_BUFFER, "toSendBuffer", ("A", "ser")),
        Relied(STREAM_BUFFER, "ackPacket"),
        Relied(STREAM_BUFFER, "ackDataErrPacket"),
    ),
    "reply_inbox": (  # brain/web/reply_inbox.py: send_confirmed runs the transmit itself
        Relied("thespian.system.systemBase", "ExternalOpsToActors._tx_to_actor",
               ("self", "actorAddress", "message")),
        Relied("thespian.system.systemBase", "ExternalOpsToActors._run_transport",
               ("self", "maximumDuration", "txonly", "incomingHandler")),
        Relied("thespian.system.systemBase", "systemBase.external_clone", ("self",)),
        Relied("thespian.system.transport", "SendStatus.DeadTarget"),  # send_status
        Relied("thespian.system.transport", "TransmitIntent.__init__",
               ("self", "targetAddr", "msg", "onSuccess", "onError", "maxPeriod",
                "retryPeriod")),
        Relied("thespian.system.systemBase", "TransmitTrack.__init__",
               ("self", "transport", "adminAddr")),
        Relied("thespian.system.systemBase", "TransmitTrack.transmit_failed",
               ("self", "result", "intent")),
    ),
}
"""Each patch (its module in brain/actors/) and what of Thespian 4.0.1 it replaces or uses;
`reply_inbox` (send_confirmed, send_status) is not a patch but relies on private methods the
same way."""


def installed_thespian() -> str | None:
    """The installed Thespian's version, or None when none is installed."""
    try:
        return importlib.metadata.version("thespian")
    except importlib.metadata.PackageNotFoundError:
        return None


def check_thespian(patches: Iterable[str] = tuple(PATCHES), *,
                   installed: str | None = None,
                   table: dict[str, tuple[Relied, ...]] | None = None) -> None:
    """Raise ThespianMismatch unless every patch in `patches` fits the installed Thespian.

    `installed` (default: what importlib.metadata reports) and `table` (default: PATCHES) are
    for tests.
    """
    names = list(patches)
    version = installed if installed is not None else installed_thespian()
    if version != THESPIAN_VERSION:
        raise ThespianMismatch(
            f"Thespian {version or '(none)'} is installed, but Brain's Thespian patches "
            f"({', '.join(names)}) are written for Thespian {THESPIAN_VERSION}: install "
            f"thespian=={THESPIAN_VERSION} ({DOCS})")
    for patch in names:
        for relied in (table or PATCHES)[patch]:
            problem = _misfit(relied)
            if problem is not None:
                raise ThespianMismatch(
                    f"Thespian patch {patch}: {relied.name} {problem}; the patch is written "
                    f"for Thespian {THESPIAN_VERSION} and is not applied ({DOCS})")


def _misfit(relied: Relied) -> str | None:
    """What is wrong with `relied` in the installed Thespian, or None when it fits."""
    try:
        value: object = importlib.import_module(relied.module)
    except ImportError as exc:
        return f"cannot be imported ({exc})"
    for part in relied.attribute.split("."):
        if not hasattr(value, part):
            return "is missing"
        value = getattr(value, part)
    if relied.parameters is None:
        return None
    try:
        found = tuple(inspect.signature(value).parameters)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return "is no longer a function"
    if found != relied.parameters:
        return (f"takes ({', '.join(found)}) where the patch expects "
                f"({', '.join(relied.parameters)})")
    return None


def patch_once(patch: str) -> Callable[[Callable[[], None]], Callable[[], None]]:
    """Make a function that applies `patch` run once per process, and only after
    `check_thespian([patch])` passed: a later call does nothing, and a Thespian the patch does
    not fit raises ThespianMismatch with nothing patched. `.applied` tells whether it ran."""

    def decorate(apply: Callable[[], None]) -> Callable[[], None]:
        @functools.wraps(apply)
        def apply_once() -> None:
            if apply_once.applied:  # type: ignore[attr-defined]
                return
            check_thespian([patch])
            apply()
            apply_once.applied = True  # type: ignore[attr-defined]

        apply_once.applied = False  # type: ignore[attr-defined]
        return apply_once

    return decorate
