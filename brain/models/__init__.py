"""Model providers: the scripted default, OpenAI-compatible and Anthropic (docs/models.md)."""

from brain.models.base import ModelCallError, Provider, ProviderSpecError
from brain.models.registry import make_provider

__all__ = ["ModelCallError", "Provider", "ProviderSpecError", "make_provider"]
