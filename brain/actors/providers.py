"""The model executor's providers, built once per model table instead of once per call.

A provider holds only what its `[models.NAME]` table says (a compiled script, an endpoint,
timeouts) and keeps no state between calls (a stream's state is made per call), so one object
serves every call, from any thread, for as long as the table it was built from is the one a
call names. A session's config is a snapshot taken at its creation, so two sessions may name
the same model with different tables: the table is compared on every lookup and a different
one builds (and keeps) a new provider.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from typing import Any

from brain.models.base import Provider

MAX_PROVIDERS = 64
"""Tables kept; beyond that the oldest is dropped (a server has a handful of models)."""


class ProviderCache:
    def __init__(self, limit: int = MAX_PROVIDERS) -> None:
        self._limit = limit
        self._built: dict[str, tuple[dict[str, Any], Provider]] = {}
        self._lock = threading.Lock()  # effect threads look up at once

    def get(self, name: str, spec: dict[str, Any],
            environ: Mapping[str, str] = os.environ) -> Provider:
        """The provider for `name` built from exactly `spec`; raises what make_provider
        raises for a table no provider can run (and keeps nothing then)."""
        from brain.models import make_provider

        with self._lock:
            kept = self._built.get(name)
            if kept is not None and kept[0] == spec:
                return kept[1]
        provider = make_provider(name, spec, environ)
        with self._lock:
            self._built.pop(name, None)
            if len(self._built) >= self._limit:
                self._built.pop(next(iter(self._built)))
            self._built[name] = (spec, provider)
        return provider
