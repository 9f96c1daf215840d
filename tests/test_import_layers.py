"""Lower layers import no higher ones: checked in a fresh interpreter, so nothing is cached."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest


def imported_after(module: str) -> set[str]:
    code = f"import sys, {module}; print(' '.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                         text=True, timeout=60)
    return {name for name in out.stdout.split() if name.startswith("brain")}


@pytest.mark.parametrize("module", ["brain.models", "brain.models.openai",
                                    "brain.models.anthropic", "brain.models.scripted"])
def test_model_providers_do_not_import_the_configuration(module):
    """config validates model tables through make_provider; the reverse import was a cycle."""
    assert "brain.config" not in imported_after(module)


def test_config_error_has_one_home():
    import brain.config
    import brain.errors
    from brain.models import ProviderSpecError

    assert brain.config.ConfigError is brain.errors.ConfigError
    assert issubclass(ProviderSpecError, brain.errors.ConfigError)


PROTOCOL = sorted(f"brain.protocol.{path.stem}" for path in
                  (Path(__file__).resolve().parents[1] / "brain" / "protocol").glob("*.py")
                  if path.stem != "__init__")


@pytest.mark.parametrize("module", PROTOCOL)
def test_the_protocol_is_a_bottom_layer(module):
    """The vocabulary (messages, effects, record kinds) is spoken by the session core, the
    actors, the web tier and the journal: it imports none of them."""
    above = ("brain.sessions", "brain.actors", "brain.web", "brain.journal")
    assert not {name for name in imported_after(module) if name.startswith(above)}


def test_the_record_kinds_import_nothing_of_brain():
    assert imported_after("brain.protocol.records") == {"brain", "brain.protocol",
                                                       "brain.protocol.records"}
