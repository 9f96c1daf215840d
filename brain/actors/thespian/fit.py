"""Refuse to patch a Thespian that Brain's fixes were not written for.

Every module of brain/actors/thespian/ that replaces a private part of Thespian 4.0.1, or relies
on one, has an entry in PATCHES (docs/thespian-patches.md lists them all): the fixes reported
in that document, the socket confinement (`confine`), the process titles (`proctitle`), the
admin kept in Brain's process group (`no_daemon`), and `endpoint`, the one adapter through which
the rest of Brain reaches what Thespian keeps private about an endpoint (its admin's address, a
new endpoint, a send run to its end). A private part can change in any release; a patch applied
to a changed one would fail at the first message, or worse, quietly undo the fix. So before
anything is patched, the installed Thespian must be 4.0.1 and every attribute a patch replaces
or relies on must still be there with the parameters it had, and with the lines of its code the
patch counts on (an attribute it sets on its instances, a call it makes). Otherwise
`ThespianMismatch` says, in one line, which patch and which attribute; `brain serve`,
`brain actors`, `brain web` and the boot process print that line and exit instead of starting.

This module imports no Thespian module at its top and reports a module that does not import as
a mismatch, so the check itself never ends in a traceback.
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import inspect
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

THESPIAN_VERSION = "4.0.1"
DOCS = "docs/thespian-patches.md"

TRANSPORT = "thespian.system.transport.TCPTransport"
CONVENTION = "thespian.system.admin.convention"
STREAM_BUFFER = "thespian.system.transport.streamBuffer"
IP_BASE = "thespian.system.transport.IPBase"
MULTIPROC = "thespian.system.multiprocCommon"
SYSTEM_BASE = "thespian.system.systemBase"


class ThespianMismatch(Exception):
    """The installed Thespian is not the one a patch was written for; the message is one line."""


@dataclass(frozen=True)
class Relied:
    """An attribute of a Thespian module that a patch replaces or relies on.

    `parameters`: the names of its parameters in Thespian 4.0.1, or None for an attribute that
    is not called (a class or a module), which only has to exist.
    `contains`: fragments of its source the patch counts on, whitespace ignored: an attribute
    of its instances it sets (`self._rData =`), which the patch reads or writes, or a call it
    makes (`os.setsid()`).
    """

    module: str
    attribute: str
    parameters: tuple[str, ...] | None = None
    contains: tuple[str, ...] = ()

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
        Relied(TRANSPORT, "TCPTransport._scheduleTransmitActual",
               ("self", "intent", "has_exclusive_flag"),
               contains=("intent.stage = self._XMITStepSendConnect",)),
        Relied(TRANSPORT, "TCPTransport._XMITStepRetry"),
        Relied(TRANSPORT, "opsKey", ("addr",)),
        Relied(TRANSPORT, "_safeSocketShutdown", ("sock",)),
        Relied(TRANSPORT, "TCPTransport.__init__", ("self", "initType", "args"),
               contains=("self._openSockets =",)),
        Relied("thespian.system.transport", "PauseWithBackoff.backoffPause",
               ("self", "startPausing"),
               contains=("self._lastPauseLength =", "self._pauseUntil =")),
    ),
    "thespian_select": (
        Relied(TRANSPORT, "selectors"),
        Relied(TRANSPORT, "TCPTransport._runWithExpiry", ("self", "incomingHandler")),
        Relied(TRANSPORT, "TCPTransport._check_fd", ("fd",)),
    ),
    "thespian_receive": (
        Relied(TRANSPORT, "TCPIncoming_Common.remainingSize", ("self",)),
        Relied(TRANSPORT, "TCPIncoming_Common.__init__", ("self", "rmtAddr", "baseSock",
                                                          "rcvBuf"),
               contains=("self._rData =",)),
        Relied(STREAM_BUFFER, "ReceiveBuffer.__init__", ("self", "serializer"),
               contains=("self._buf =", "self._size =", "self._deserialize =")),
        Relied(STREAM_BUFFER, "ReceiveBuffer.remainingAmount", ("self",)),
        Relied(STREAM_BUFFER, "ReceiveBuffer.is_empty", ("self",)),
        Relied(TRANSPORT, "TCPTransport._next_XMIT_2", ("self", "intent"),
               contains=("intent.stage = self._XMITStepShutdownWrite",)),
        Relied(TRANSPORT, "TCPTransport._next_XMIT_3", ("self", "intent"),
               contains=("intent.ackbuf = ReceiveBuffer(serializer.loads)",
                         "intent.stage = self._XMITStepWaitForAck")),
        Relied(TRANSPORT, "TCPTransport._next_XMIT_4", ("self", "intent"),
               contains=("intent.socket.recv(intent.ackbuf.remainingAmount())",)),
        Relied(TRANSPORT, "TCPTransport._nextTransmitStep", ("self", "intent")),
        Relied(TRANSPORT, "TCPTransport._XMITStepShutdownWrite"),
    ),
    "thespian_idle": (
        Relied("thespian.system.transport.IPBase", "IPActorAddress.__hash__", ("self",)),
        Relied("thespian.system.transport.IPBase", "IPActorAddress.__getstate__", ("self",)),
        Relied("thespian.system.transport.IPBase", "IPActorAddress.socketArgs"),
        Relied("thespian.system.transport.IPBase", "IPActorAddress.connectArgs"),
        Relied(TRANSPORT, "IdleSocket.expired", ("self",)),
        Relied(TRANSPORT, "IdleSocket.__init__", ("self", "socket", "addr")),
        Relied("thespian.system.timing", "currentTime"),
        Relied("thespian.system.timing", "ExpirationTimer.__init__", ("self", "duration"),
               contains=("self._time_to_quit =",)),
    ),
    "thespian_wakeups": (
        Relied("thespian.system.transport.wakeupTransportBase",
               "wakeupTransportBase.addWakeup", ("self", "timePeriod", "payload"),
               contains=("self.run_time = newTimer",)),
        Relied("thespian.system.transport.wakeupTransportBase", "wakeupTransportBase.__init__",
               ("self", "args", "kw"),
               contains=("self._wakeup_lock =", "self._pendingWakeups =")),
        Relied("thespian.system.timing", "ExpirationTimer.__lt__", ("self", "o")),
    ),
    "thespian_convention": (
        Relied(CONVENTION, "ConventioneerAdmin._not_compatible", ("self", "createActorEnvelope")),
        Relied(CONVENTION, "ConventioneerAdmin._pending_send_failed", ("self", "result",
                                                                        "intent")),
        Relied(CONVENTION, "ConventioneerAdmin._sendPendingActorResponse",
               ("self", "requestEnvelope", "actualAddress", "errorCode", "errorStr")),
        Relied("thespian.system.admin.adminCore", "AdminCore.__init__",
               ("self", "transport", "address", "capabilities", "logdefs",
                "concurrency_context"),
               contains=("self._pendingChildren =",)),
    ),
    "thespian_identify": (
        Relied("thespian.system.transport", "TransmitIntent.identify", ("self",)),
        Relied("thespian.system.transport", "ReceiveEnvelope.identify", ("self",)),
        Relied("thespian.system.transport", "ReceiveEnvelope.__str__", ("self",)),
    ),
    "thespian_exits": (
        Relied(MULTIPROC, "MultiProcReplicator.childDied", ("self",)),
        Relied(MULTIPROC, "MultiProcReplicator._startChildActor",
               ("self", "childAddr", "childClass", "globalName", "parentAddr", "notifyAddr",
                "childRequirements", "sourceHash", "sourceToLoad"),
               contains=("self._child_procs =",)),
        Relied(MULTIPROC, "ChildInfo.__init__",
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
                                                          "rcvBuf"),
               contains=("self._rData =",)),
        Relied(TRANSPORT, "TCPIncoming_Common.receivedAllData", ("self",)),
        Relied(STREAM_BUFFER, "ReceiveBuffer.__init__", ("self", "serializer"),
               contains=("self._buf =", "self._blen =", "self._size =",
                         "self._deserialize =")),
        Relied(STREAM_BUFFER, "ReceiveBuffer.completed", ("self",)),
        Relied(STREAM_BUFFER, "toSendBuffer", ("A", "ser")),
        Relied(STREAM_BUFFER, "ackPacket"),
        Relied(STREAM_BUFFER, "ackDataErrPacket"),
    ),
    "thespian_confine": (
        Relied(IP_BASE, "IPActorAddress.__init__",
               ("self", "af", "socktype", "proto", "baseaddr", "port", "external"),
               contains=("self.bindname =", "os.getenv('THESPIAN_BASE_IPADDR', None)")),
        Relied(IP_BASE, "thisSystem"),
        Relied(IP_BASE, "ThisSystem.add_local_addr", ("self", "newaddr")),
        Relied(TRANSPORT, "REUSE_SOCKETS"),
        Relied(TRANSPORT, "LISTEN_DEPTH"),
        Relied(TRANSPORT, "TCPTransport.__init__", ("self", "initType", "args"),
               contains=("self.socket.listen(LISTEN_DEPTH)",)),
    ),
    "thespian_proctitle": (
        Relied(MULTIPROC, "setProcName", ("name", "actorAddr")),
        Relied("thespian.system.logdirector", "setProcName", ("name", "actorAddr")),
        Relied(MULTIPROC, "startAdmin",
               ("adminClass", "addrOfStarter", "endpointPrep", "transportClass", "adminAddr",
                "capabilities", "logDefs", "concurrency_context"),
               contains=("setProcName(",)),
        Relied(MULTIPROC, "startChild",
               ("childClass", "globalName", "endpoint", "transportClass", "sourceHash",
                "sourceToLoad", "parentAddr", "adminAddr", "notifyAddr", "loggerAddr",
                "childRequirements", "currentSystemCapabilities", "fileNumsToClose",
                "concurrency_context", "logDefs"),
               contains=("setProcName(",)),
        Relied("thespian.system.logdirector", "startupASLogger",
               ("addrOfStarter", "logEndpoint", "logDefs", "transportClass",
                "aggregatorAddress"),
               contains=("setProcName(",)),
    ),
    "thespian_no_daemon": (
        Relied(MULTIPROC, "startAdmin",
               ("adminClass", "addrOfStarter", "endpointPrep", "transportClass", "adminAddr",
                "capabilities", "logDefs", "concurrency_context"),
               contains=("os.setsid()",)),
    ),
    "thespian_endpoint": (  # brain/actors/thespian/endpoint.py
        Relied("thespian.actors", "ActorSystem._startupActorSys",
               ("self", "currentSystemBase", "systemBase", "capabilities", "logDefs"),
               contains=("self._systemBase = systemBase",)),
        Relied("thespian.actors", "ExternalContext.__init__", ("self", "systemBase"),
               contains=("self._systemBase = systemBase",)),
        Relied(SYSTEM_BASE, "systemBase.external_clone", ("self",)),
        Relied(SYSTEM_BASE, "ExternalOpsToActors.__init__", ("self", "adminAddr", "transport"),
               contains=("self.adminAddr =", "self.transport =")),
        # send_status runs a transmit as _tx_to_actor schedules one, then the transport itself
        Relied(SYSTEM_BASE, "ExternalOpsToActors._tx_to_actor",
               ("self", "actorAddress", "message")),
        Relied(SYSTEM_BASE, "ExternalOpsToActors._run_transport",
               ("self", "maximumDuration", "txonly", "incomingHandler")),
        Relied(SYSTEM_BASE, "TransmitTrack.__init__", ("self", "transport", "adminAddr")),
        Relied(SYSTEM_BASE, "TransmitTrack.transmit_failed", ("self", "result", "intent")),
        Relied(SYSTEM_BASE, "TransmitTrack.failed"),
        Relied(SYSTEM_BASE, "TransmitTrack.failure"),
        Relied("thespian.system.transport", "SendStatus.DeadTarget"),
        Relied("thespian.system.transport", "TransmitIntent.__init__",
               ("self", "targetAddr", "msg", "onSuccess", "onError", "maxPeriod",
                "retryPeriod"),
               contains=("self._attempts =",)),
        Relied("thespian.system.transport.asyncTransportBase",
               "asyncTransportBase.scheduleTransmit",
               ("self", "addressManager", "transmitIntent", "has_exclusive_flag")),
        Relied(TRANSPORT, "TCPTransport._next_XMIT_1", ("self", "intent"),
               contains=("intent.amtSent =",)),
        Relied(TRANSPORT, "TCPTransport.__init__", ("self", "initType", "args"),
               contains=("self.myAddress =",)),
    ),
}
"""Each module of brain/actors/thespian/ that touches Thespian's internals (PATCH_MODULES) and
what of Thespian 4.0.1 it replaces or relies on. `thespian_endpoint` patches nothing: it is the
adapter through which the rest of Brain uses what Thespian keeps private about an endpoint."""

PATCH_MODULES: dict[str, str] = {
    "thespian_reuse": "reuse",
    "thespian_select": "poll",
    "thespian_receive": "receive",
    "thespian_idle": "idle",
    "thespian_wakeups": "wakeups",
    "thespian_convention": "forwarded_creates",
    "thespian_identify": "identify",
    "thespian_exits": "exits",
    "thespian_auth": "auth",
    "thespian_confine": "confine",
    "thespian_proctitle": "proctitle",
    "thespian_no_daemon": "no_daemon",
    "thespian_endpoint": "endpoint",
}
"""The module of brain/actors/thespian/ behind each entry of PATCHES."""


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
    if relied.parameters is not None:
        try:
            found = tuple(inspect.signature(value).parameters)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            return "is no longer a function"
        if found != relied.parameters:
            return (f"takes ({', '.join(found)}) where the patch expects "
                    f"({', '.join(relied.parameters)})")
    if relied.contains:
        try:
            source = _squeezed(inspect.getsource(value))  # type: ignore[arg-type]
        except (TypeError, OSError):
            return "has no source to read"
        for fragment in relied.contains:
            if _squeezed(fragment) not in source:
                return f"no longer contains `{fragment}`"
    return None


def _squeezed(code: str) -> str:
    return re.sub(r"\s+", "", code)


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
