"""The mark a writer leaves on its last segment when it closes with everything flushed.

An open must make durable whatever an earlier writer may have left only in the page cache (a
writer killed between its `write` and its `fdatasync`), which an `fdatasync` at every open
would do. With sessions released after every turn that would be a seventh flush per turn, and
a flush of a file with nothing dirty costs as much as a real one (measured ~equal on ext4).

A writer that closes healthy (every append it made returned, so each was flushed) tags the
segment with its size in an extended attribute. The next open takes the tag (reads and
removes it, under the journal's lock) and skips the flush when the segment still has exactly
that size: nothing was written after the last flush. A writer that dies leaves no tag, so the
open after it flushes. The tag itself needs no flush: if the machine loses its page cache, it
loses the tag with it, or keeps a tag whose bytes were flushed before it was set.
A file system without user extended attributes simply never has the tag.
"""

from __future__ import annotations

import os

SYNCED_XATTR = "user.brain.synced"


def mark_synced(fd: int, size: int) -> None:
    """Tag the open segment `fd`: its first `size` bytes were all flushed by this writer."""
    try:
        os.setxattr(fd, SYNCED_XATTR, str(size).encode("ascii"))
    except OSError:
        pass  # no user xattrs here: the next open flushes


def take_synced_mark(fd: int) -> int | None:
    """The size a healthy writer tagged the segment with, removing the tag; None if untagged."""
    try:
        value = os.getxattr(fd, SYNCED_XATTR)
    except OSError:
        return None
    try:
        os.removexattr(fd, SYNCED_XATTR)
    except OSError:
        return None  # a tag that cannot be removed could outlive a later crash: distrust it
    try:
        return int(value.decode("ascii"))
    except ValueError:
        return None
