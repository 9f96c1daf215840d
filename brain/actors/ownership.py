"""Which Brain an actor system belongs to, so that nobody joins another Brain's actors.

Thespian's `ActorSystem()` starts an admin only when none answers on the admin port; when one
does, it silently joins it. Two Brains given the same actor port (a port chosen as free a moment
before another process took it, or two `brain serve` on one machine) then share one actor
system: the second one's creates and turns run in the first one's session actors, which write
the first one's data directory, while the second one's reads look in its own. A create answered
201 was then read back as 404 `no such session`.

The registry answers `OWNER_QUESTION` with the identity of the Brain whose boot process started
the admin (every actor process inherits that process's environment). The boot process refuses to
go on in an actor system that is not its own start's, and a web worker refuses to answer for one
that writes another data directory.
"""

from __future__ import annotations

from typing import Any

from brain.settings import Settings

OWNER_QUESTION = "owner"
OWNER_TIMEOUT_SECS = 10.0


def owner_identity() -> dict[str, Any]:
    """This process's Brain: its start (boot id) and the data directory it writes."""
    settings = Settings.from_env()
    return {"boot_id": settings.boot_id, "data_dir": str(settings.data_path)}


def foreign_owner(answer: Any, settings: Settings, *, same_start: bool) -> str | None:
    """Why the actor system that gave `answer` is not the one `settings` describe, or None.

    `same_start` also requires the same boot id (the boot process, which knows it made the
    admin); a web worker only requires the same data directory, which is what its reads see.
    """
    port = settings.actor_port
    if not isinstance(answer, dict) or "data_dir" not in answer:
        return (f"the actor system on port {port} did not say which Brain it belongs to; "
                "is another program using BRAIN_ACTOR_PORT?")
    if answer["data_dir"] != str(settings.data_path):
        return (f"the actor system on port {port} belongs to another Brain (data in "
                f"{answer['data_dir']}); give this one another BRAIN_ACTOR_PORT")
    if same_start and answer.get("boot_id") != settings.boot_id:
        return (f"the actor system on port {port} belongs to another start of Brain on the "
                "same data directory; stop it first")
    return None
