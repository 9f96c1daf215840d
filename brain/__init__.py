"""Brain: durable sessions for AI agents, one fsync'd journal per session."""

__version__ = "0.1.0"
