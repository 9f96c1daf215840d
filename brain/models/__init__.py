"""Model providers: the scripted default, OpenAI-compatible and Anthropic (docs/models.md)."""

from brain.models.base import OUTCOMES, ModelCallError, Provider, ProviderSpecError
from brain.models.registry import make_provider

__all__ = ["OUTCOMES", "ModelCallError", "Provider", "ProviderSpecError", "make_provider"]
