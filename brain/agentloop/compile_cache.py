"""The one cache of compiled Agentloop components on a machine, and the compile that fills it.

A component built from Python carries a whole interpreter (~18 MB) and takes seconds to
compile. `brain agentloop build`, `brain agentloop check`, `brain replay` and `brain serve` (its
start, and any session actor that meets a component nobody compiled) all look here first and
store here what they compile, so a file is compiled once on a machine, whichever command meets
it first. An artifact's name holds the sha256 of the component file and the wasmtime version
that compiled it (components.artifact_name): a changed file or another wasmtime is a miss, never
a wrong hit. Each is stored whole with its checksum (artifacts.py).

The directory is BRAIN_AGENTLOOP_CACHE, else `$XDG_CACHE_HOME/brain/agentloops`, else
`~/.cache/brain/agentloops`, made private to its user: wasmtime runs the machine code in an
artifact unchecked, so nobody else may write there.

Two processes that meet the same new file at once do not both compile it: the first writes a
claim (`NAME.compiling`, holding its pid) beside the artifact; the second waits for the artifact
while the claimant lives. A claim left by a dead process is taken over.

Every compile is announced on stderr when it starts and when it ends, with the file's name,
its size and the seconds it took, so a wait of seconds is never silent.
"""

from __future__ import annotations

import errno
import hashlib
import os
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TypeVar

from brain.durable_dirs import create_durably, make_dirs_durable

CACHE_ENV = "BRAIN_AGENTLOOP_CACHE"
CLAIM_SUFFIX = ".compiling"
CLAIM_POLL_SECS = 0.2
CLAIM_WAIT_SECS = 600.0  # as long as a compile may take (precompile's own bound)
# what link(2) says on a file system that has no hard links (the claim then falls back)
NO_HARD_LINKS = frozenset({errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EMLINK})

Compiled = TypeVar("Compiled")


def machine_cache_dir(environ: Mapping[str, str] | None = None) -> Path:
    """Where this machine's compiled Agentloops are kept (see the module docstring)."""
    env = os.environ if environ is None else environ
    if env.get(CACHE_ENV):
        return Path(env[CACHE_ENV]).expanduser().absolute()
    base = Path(env["XDG_CACHE_HOME"]) if env.get("XDG_CACHE_HOME") else \
        Path.home() / ".cache"
    return (base / "brain" / "agentloops").absolute()


def ready_cache_dir(environ: Mapping[str, str] | None = None) -> Path:
    """The machine cache directory, made (private to this user) if it was not there."""
    path = machine_cache_dir(environ)
    make_dirs_durable(path)
    return path


def sha256_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def announce(line: str) -> None:
    """One line on stderr, flushed: what a developer waiting on a compile sees."""
    print(f"brain: {line}", file=sys.stderr, flush=True)


def size_text(size: int) -> str:
    return f"{size / 1e6:.1f} MB"


def compile_once(label: str, size: int, artifact: Path | None,
                 load: Callable[[Path], Compiled | None],
                 compile_and_store: Callable[[], Compiled]) -> tuple[Compiled, str, float]:
    """The compiled artifact at `artifact`: loaded when stored, waited for when another
    process is compiling it, else compiled here (announced, start and end) and stored by
    `compile_and_store`. Returns it, the action ("cached", "waited", "compiled") and seconds.

    `label` names the file in the announcements; `load` returns None for a missing, torn or
    foreign artifact. With no `artifact` (no cache at all) it only compiles, announced."""
    started = time.monotonic()
    claim = None
    if artifact is not None:
        found = load(artifact)
        if found is not None:
            return found, "cached", time.monotonic() - started
        claim = _claim(artifact)
        if claim is None:
            announce(f"waiting for another process compiling Agentloop {label} "
                     f"({size_text(size)})")
            _wait_for_claim(artifact)
            found = load(artifact)
            if found is not None:
                return found, "waited", time.monotonic() - started
            claim = _claim(artifact, take_over=True)
        else:  # another process may have stored it and let its claim go since the load above
            found = load(artifact)
            if found is not None:
                _release(claim)
                return found, "cached", time.monotonic() - started
    try:
        kept = f"; once per machine, kept in {artifact.parent}" if artifact is not None else ""
        announce(f"compiling Agentloop {label} ({size_text(size)}){kept}")
        try:
            compiled = compile_and_store()
        except BaseException:
            announce(f"compiling Agentloop {label} failed after "
                     f"{time.monotonic() - started:.1f} s")
            raise
        seconds = time.monotonic() - started
        announce(f"compiled Agentloop {label} ({size_text(size)}) in {seconds:.1f} s")
        return compiled, "compiled", seconds
    finally:
        if claim is not None:
            _release(claim)


def claim_path(artifact: Path) -> Path:
    return artifact.with_name(artifact.name + CLAIM_SUFFIX)


def _claim(artifact: Path, take_over: bool = False) -> Path | None:
    """Our claim on compiling `artifact`, or None while a live process holds one. A cache
    that cannot be written gives a claim that is nobody's (the compile still runs)."""
    path = claim_path(artifact)
    for _ in range(2):
        try:
            _create_whole(path)
        except FileExistsError:
            holder = _holder(path)
            if not take_over and holder is not None and _alive(holder):
                return None
            _release(path)  # a dead process's claim, or one we were told to take over
            continue
        except OSError:
            return None if not take_over else path
        return path
    return path


def _create_whole(path: Path) -> None:
    """The claim file with our pid in it, whole from the moment it has its name
    (`create_durably`: written privately, then linked; FileExistsError when `path` exists). A
    claim made empty and then written could be read in between, empty, and taken for a dead
    process's by a second compiler."""
    try:
        made = create_durably(path, str(os.getpid()).encode())
    except OSError as exc:
        if exc.errno not in NO_HARD_LINKS:
            raise
        _create_then_write(path)  # a file system without hard links: the older, racier way
        return
    if not made:
        raise FileExistsError(errno.EEXIST, "claimed by another process", str(path))


def _create_then_write(path: Path) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(str(os.getpid()))


def _holder(path: Path) -> int | None:
    try:
        return int(path.read_text().strip() or "0") or None
    except (OSError, ValueError):
        return None


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return False  # a claim of ours left behind (a fork's parent's): not a compile to wait on
    try:
        os.kill(pid, 0)
    except OSError as exc:
        return exc.errno == errno.EPERM
    return True


def _wait_for_claim(artifact: Path) -> None:
    """Until the claimant is gone (done, or dead), bounded by CLAIM_WAIT_SECS."""
    path = claim_path(artifact)
    deadline = time.monotonic() + CLAIM_WAIT_SECS
    while time.monotonic() < deadline:
        holder = _holder(path)
        if holder is None or not _alive(holder):
            return
        time.sleep(CLAIM_POLL_SECS)


def _release(path: Path) -> None:
    try:
        path.unlink()
    except OSError:
        pass
