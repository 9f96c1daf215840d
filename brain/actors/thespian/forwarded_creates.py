"""A fix to Thespian 4.0.1's convention admin: a create forwarded to another member is forgotten.

When an admin cannot create an actor itself (the class's `actorSystemCapabilityCheck` refuses
its capabilities) it forwards the request to a member that can, and that member answers the
requester directly. But the admin had already filed the request under a pending-child entry,
and nothing ever removes it. For a request with a global name the stale entry is fatal: every
later request for the same name is queued behind it and never answered, so the second front-end
worker to look up another member's registry (`brain.registry.<member>`) waited 50 s and failed
(measured; the first always worked). The patch drops the entry once the request has left.

A second patch, from reading the same code rather than from a failure seen: when the forwarded
request cannot be delivered (the member died since it was chosen) the admin tries the next
member, and if there is none the leader's admin raises out of a transport callback, which would
end the admin and with it the leader's `brain serve`. The requester is answered "no compatible
actor system" instead.
"""

from __future__ import annotations

import functools
from typing import Any

from brain.actors.thespian.fit import patch_once


@patch_once("thespian_convention")
def patch_forwarded_creates() -> None:
    """Make every admin this process forks forget a create request once it was forwarded.

    Thespian's admin module reads its settings when first imported: call this after
    `prepare_convention_checkins` (brain/actors/convention.py).
    """
    from thespian.system.admin.convention import ConventioneerAdmin

    forward = ConventioneerAdmin._not_compatible

    @functools.wraps(forward)
    def forward_and_forget(self: Any, createActorEnvelope: Any) -> Any:
        result = forward(self, createActorEnvelope)
        for instance, waiting in list(self._pendingChildren.items()):
            if waiting and waiting[0] is createActorEnvelope:
                # Nothing can have queued behind it: the entry is made, found not creatable
                # here and forwarded within one message's handling.
                del self._pendingChildren[instance]
        return result

    ConventioneerAdmin._not_compatible = forward_and_forget
    ConventioneerAdmin._pending_send_failed = functools.wraps(
        ConventioneerAdmin._pending_send_failed)(_answer_when_nobody_else_can)


def _answer_when_nobody_else_can(self: Any, result: Any, intent: Any) -> None:
    from thespian.actors import NoCompatibleSystemForActor
    from thespian.system.messages.admin import PendingActorResponse

    try:
        self._not_compatible(intent.orig_create_envelope)
    except NoCompatibleSystemForActor:
        self._sendPendingActorResponse(
            intent.orig_create_envelope, None,
            errorCode=PendingActorResponse.ERROR_No_Compatible_ActorSystem, errorStr="")
