"""The shared actors that carry out effects a session has already journaled: model calls, Tool
calls, Environment operations, host calls and webhooks (`base.py` is what they share)."""
