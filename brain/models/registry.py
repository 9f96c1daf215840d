"""Turn a `[models.NAME]` table into a provider: the one place that knows every family."""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping
from typing import Any

from brain.models.base import Provider, ProviderSpecError

FAMILIES: dict[str, str] = {
    "scripted": "brain.models.scripted:ScriptedProvider",
    "openai": "brain.models.openai:OpenAIProvider",
    "anthropic": "brain.models.anthropic:AnthropicProvider",
}


def make_provider(
    name: str, spec: dict[str, Any], environ: Mapping[str, str] = os.environ
) -> Provider:
    """Build the provider for model `name`.

    `environ` is where network providers read their API key, at call time, from the variable
    that `api_key_env` names; the key is never copied into the provider or the spec. Raises
    ProviderSpecError for a table no provider can run, so `brain serve` can refuse it at start.
    """
    family = spec.get("provider", "scripted")
    target = FAMILIES.get(family)
    if target is None:
        raise ProviderSpecError(f"models.{name}: provider must be one of {tuple(FAMILIES)}")
    module_name, class_name = target.split(":")
    cls = getattr(importlib.import_module(module_name), class_name)
    if family == "scripted":
        return cls(name, spec)
    return cls(name, spec, environ)
