"""Tell an Agentloop file's kind from its first bytes: a core module or a component.

Both start with the Wasm magic `\\0asm`; the next four bytes are the binary's version and
layer: `01 00 00 00` for a core module (the C ABI), `0d 00 01 00` for a component (the WIT
world). Nothing else about a file is trusted to say what it is (its name least of all).
"""

from __future__ import annotations

MAGIC = b"\0asm"
CORE_MODULE = "core module"
COMPONENT = "component"
CORE_HEADER = MAGIC + b"\x01\x00\x00\x00"


def guest_kind(data: bytes) -> str | None:
    """CORE_MODULE, COMPONENT, or None for bytes that are neither."""
    if data[:8] == CORE_HEADER:
        return CORE_MODULE
    if data[:4] == MAGIC and data[6:8] == b"\x01\x00":  # layer 1: the component model
        return COMPONENT
    return None


def describe_header(data: bytes) -> str:
    """What a file that is not an Agentloop looks like, for an error message."""
    if data[:4] != MAGIC:
        return "not a WebAssembly binary (no \\0asm magic)"
    return f"a WebAssembly binary of unknown version/layer {data[4:8].hex(' ')}"
