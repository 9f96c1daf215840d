"""POST /v1/sessions/{id}/forks: a new session starting from this one's state at a sequence.

The fork is decided by reading the parent's journal in this worker (brain/journal/projection_at.py)
and judging what was read (brain/sessions/fork.py), so the parent's actor is never woken and a
busy parent is no obstacle; the child is then created through the registry exactly as
POST /v1/sessions creates a session, on this member.
"""

from __future__ import annotations

import falcon

from brain import errors
from brain.actors.convention import member_session_id
from brain.journal import CorruptJournal, SessionReader
from brain.journal.projection_at import projection_at
from brain.sessions.fork import fork_command, refuse_past_end
from brain.settings import Settings
from brain.web.contract import WRITE_ERRORS, Answer, operation
from brain.web.gateway import ActorGateway
from brain.web.reads import damaged_error, session_dir
from brain.web.resources.sessions import CREATE_TIMEOUT_SECS, new_session_id
from brain.web.schema import Schema
from brain.web.shapes import SEQUENCE, SESSION

FORK_BODY = Schema("ForkBody", {
    "type": "object",
    "additionalProperties": False,
    "required": ["at_sequence"],
    "properties": {
        "at_sequence": {**SEQUENCE, "description":
                        "The parent's record whose state the fork starts from (an Event's "
                        "`sequence`); not inside a turn, not past the last record."},
    },
}, "fork body")


class ForksResource:
    operator_only = True  # it creates a session, as POST /v1/sessions does
    admits_work = True
    idempotent = {"POST": "fork"}

    def __init__(self, settings: Settings, gateway: ActorGateway) -> None:
        self.settings = settings
        self.gateway = gateway

    @operation("forkSession", "Create a session from this one's state at a sequence",
               {201: Answer("The new session (the fork)", SESSION, ("Location",))},
               errors=(*WRITE_ERRORS, 422, 503), body=FORK_BODY, body_required=True)
    def on_post(self, req: falcon.Request, resp: falcon.Response, session_id: str) -> None:
        at_sequence = req.context.body["at_sequence"]
        parent_dir = session_dir(self.settings, session_id)
        try:
            status, refused = SessionReader(parent_dir).status_and_damage()
            if refused is not None:
                raise damaged_error(self.settings.data_path, session_id, refused)
            if status["config"] is None:
                raise errors.NotFound("no such session")  # its create never committed
            refuse_past_end(at_sequence, status["last_sequence"])
            at = projection_at(parent_dir, at_sequence)
            create = fork_command(session_id, at.record, at.batch, at_sequence)
        except CorruptJournal as exc:
            raise damaged_error(self.settings.data_path, session_id, exc) from None
        except FileNotFoundError:
            raise errors.NotFound("no such session") from None  # deleted while read
        child_id = member_session_id(new_session_id(), self.settings.member)
        view = self.gateway.request(child_id, create, CREATE_TIMEOUT_SECS)
        resp.status = falcon.HTTP_201
        resp.media = view
        resp.set_header("Location", f"/v1/sessions/{child_id}")
