"""The actor secret: the key every Thespian frame of one Brain is signed with.

Brain's actors exchange pickles over TCP, and unpickling runs code, so a frame must prove it
comes from a process of this Brain before it is unpickled (brain/actors/thespian/auth.py). The
proof is an HMAC keyed by this secret. Only processes that can read the secret can sign, so the
secret lives where only Brain's own user can read it:

- on a single host, `$BRAIN_DATA_DIR/actor.secret`, 32 random bytes, created mode 0600 at the
  first start and kept across restarts;
- in a convention of several hosts, the file BRAIN_ACTOR_SECRET_FILE names, the same bytes on
  every member (the operator copies it there); Brain never creates that one.

The boot process reads it before its admin forks, so the admin and every actor inherit it; a
web worker reads it before its first ActorSystem call.
"""

from __future__ import annotations

import os
import secrets
import stat
from pathlib import Path

from brain.durable_dirs import create_durably, make_dirs_durable
from brain.fds import close_fd
from brain.settings import Settings

SECRET_FILE = "actor.secret"
SECRET_BYTES = 32
"""What Brain generates; a configured secret must be at least this long."""


class ActorSecretError(RuntimeError):
    """The actor secret cannot be read or made; the message is one line and never quotes it."""


def actor_secret_path(settings: Settings) -> Path:
    """Where this server's actor secret is: BRAIN_ACTOR_SECRET_FILE or the data dir's own."""
    return settings.actor_secret_file or settings.data_path / SECRET_FILE


def ensure_actor_secret(settings: Settings) -> bytes:
    """The actor secret, generating the data dir's own at the first start.

    A configured BRAIN_ACTOR_SECRET_FILE is only read: a member that made its own would sign
    frames the other members drop.
    """
    if settings.actor_secret_file is not None:
        return read_actor_secret(settings)
    path = actor_secret_path(settings)
    try:
        return _read(path, follow_links=False)
    except FileNotFoundError:
        pass
    make_dirs_durable(path.parent)
    # Complete before it has its name (a private temporary, fsynced, then linked; the directory
    # fsynced): a reader never finds it half written, and of two processes making it at once,
    # one wins and both read the winner's.
    create_durably(path, secrets.token_bytes(SECRET_BYTES))
    return _read(path, follow_links=False)


def read_actor_secret(settings: Settings) -> bytes:
    """The actor secret, which must exist already (a web worker starts after the boot process
    has made it)."""
    path = actor_secret_path(settings)
    try:
        return _read(path, follow_links=settings.actor_secret_file is not None)
    except FileNotFoundError:
        raise ActorSecretError(f"the actor secret {path} does not exist"
                               + ("" if settings.actor_secret_file else
                                  " (the actor system has not started on this data dir)")
                               ) from None


def _read(path: Path, follow_links: bool) -> bytes:
    """The secret in `path`, refused when it is not a regular file, when every user may read
    or write it, or when it is shorter than SECRET_BYTES. `follow_links`: a configured file
    may be a link (secrets are often mounted so); the data dir's own never is."""
    try:
        fd = os.open(path, os.O_RDONLY | (0 if follow_links else os.O_NOFOLLOW))
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise ActorSecretError(f"the actor secret {path} cannot be read: {exc.strerror}") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise ActorSecretError(f"the actor secret {path} is not a regular file")
        if mode & (stat.S_IROTH | stat.S_IWOTH):
            raise ActorSecretError(f"the actor secret {path} is readable or writable by every "
                                   "user (mode %o); make it 0600" % stat.S_IMODE(mode))
        with os.fdopen(os.dup(fd), "rb") as secret_file:
            secret = secret_file.read()
    finally:
        close_fd(fd)
    if len(secret) < SECRET_BYTES:
        raise ActorSecretError(f"the actor secret {path} holds {len(secret)} bytes; at least "
                               f"{SECRET_BYTES} are needed (e.g. `head -c 32 /dev/urandom`)")
    return secret
