"""Live delivery hints between actor processes and web workers.

Committed Events are always read from the journal; what travels here is only a hint that a
session's journal has grown (and live-only model deltas and MCP Tool progress, which have no
journal sequence). A lost hint therefore loses nothing: the next hint or the keep-alive tick
catches the reader up.
"""

from brain.live.publisher import LivePublisher

__all__ = ["LivePublisher"]
