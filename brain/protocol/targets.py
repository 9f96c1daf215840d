"""Whom the session core sends to, by role, never by address.

A Step's sends name a Target; the shell that carries the Step out knows where each one is (a
Thespian address, found by its global name) and maps the role to it in one place
(brain/actors/session/actor.py, `ActorHands.send`). So the core holds no address and cannot
tell how, or whether, the actors are spread over processes or hosts.
"""

from __future__ import annotations

import enum


class Target(enum.StrEnum):
    REGISTRY = "registry"
    MODEL_EXECUTOR = "model executor"
    TOOL_EXECUTOR = "tool executor"
    ENVIRONMENT_EXECUTOR = "environment executor"
    WEBHOOK_EXECUTOR = "webhook executor"
