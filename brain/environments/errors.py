"""The one error an Environment op raises, carrying the effect's failure outcome."""

from __future__ import annotations

from brain.effects import EffectFailed


class EnvironmentOpError(EffectFailed):
    """An Environment op that produced no result.

    `outcome` (brain.effects) is what Brain knows: `error` (refused or definitely failed),
    `timeout`, `cancelled`, `unknown` (it may have had effects). `message` is short and safe to
    journal and to show the model: it names request paths, never server paths or internals.
    """
