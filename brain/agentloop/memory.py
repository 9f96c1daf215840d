"""Bounds-checked access to a guest's linear memory.

wasmtime-py's `Memory.read` clamps an out-of-range slice silently and reads a negative start
from the end of memory (stack hazard 6), so a guest's garbage pointer would become a
wrong-but-plausible payload. Every pointer and length the guest hands over passes through
`check_range` here first; the error names what was being accessed so the loop's author can
find the bug.
"""

from __future__ import annotations

import ctypes

import wasmtime

from brain.agentloop.errors import loop_error

MASK32 = 0xFFFF_FFFF


def as_u32(value: int) -> int:
    """Wasm i32 values reach Python signed; guest pointers and lengths are unsigned."""
    return value & MASK32


def check_range(ptr: int, length: int, size: int, what: str) -> None:
    if ptr < 0 or length < 0 or ptr + length > size:
        raise loop_error(
            f"{what} pointer 0x{ptr:x} + len {length} outside guest memory of {size} bytes"
        )


class GuestMemory:
    """The `memory` export of one instance, seen through a store or a host-call Caller.

    The base address and size are looked up on every access: a call into the guest (for
    example brain_alloc) may grow memory and move it.
    """

    def __init__(self, memory: wasmtime.Memory, store: wasmtime.Store | wasmtime.Caller) -> None:
        self._memory = memory
        self._store = store

    def size(self) -> int:
        return self._memory.data_len(self._store)

    def _base(self) -> int:
        return ctypes.addressof(self._memory.data_ptr(self._store).contents)

    def read(self, ptr: int, length: int, what: str) -> bytes:
        check_range(ptr, length, self.size(), what)
        if length == 0:
            return b""
        return ctypes.string_at(self._base() + ptr, length)

    def write(self, ptr: int, data: bytes, what: str) -> None:
        check_range(ptr, len(data), self.size(), what)
        if data:
            ctypes.memmove(self._base() + ptr, data, len(data))
