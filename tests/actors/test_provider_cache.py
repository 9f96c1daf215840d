"""The model executor builds a provider once per model table, not once per call."""

from __future__ import annotations

import threading

import pytest

from brain.actors.providers import ProviderCache
from brain.models import ModelCallError
from brain.models.base import ProviderSpecError

SPEC = {"name": "m", "provider": "scripted", "script": [{"text": "one"}]}


def answer(provider, text: str = "hi") -> str:
    result = provider.call({"messages": [{"role": "user", "content": text}]}, lambda _: None,
                           threading.Event())
    return result["message"]["content"][0]["text"]


def test_one_provider_serves_every_call_of_the_same_table() -> None:
    cache = ProviderCache()
    first = cache.get("m", dict(SPEC))
    assert cache.get("m", dict(SPEC)) is first  # an equal table from another message
    assert answer(first) == answer(cache.get("m", dict(SPEC))) == "one"


def test_a_different_table_under_the_same_name_builds_its_own() -> None:
    cache = ProviderCache()
    old = cache.get("m", dict(SPEC))
    changed = {**SPEC, "script": [{"text": "two"}]}
    new = cache.get("m", changed)
    assert new is not old and answer(new) == "two"
    assert answer(cache.get("m", dict(SPEC))) == "one"


def test_a_table_no_provider_runs_raises_each_time_and_is_not_kept() -> None:
    cache = ProviderCache()
    bad = {"name": "x", "provider": "nonesuch"}
    for _ in range(2):
        with pytest.raises(ProviderSpecError):
            cache.get("x", bad)


def test_bounded() -> None:
    cache = ProviderCache(limit=2)
    a = cache.get("a", {**SPEC, "name": "a"})
    cache.get("b", {**SPEC, "name": "b"})
    cache.get("c", {**SPEC, "name": "c"})
    assert cache.get("a", {**SPEC, "name": "a"}) is not a  # the oldest was dropped


def test_the_key_is_read_at_call_time_not_kept() -> None:
    spec = {"name": "o", "provider": "openai", "base_url": "http://127.0.0.1:9/v1",
            "model": "x", "api_key_env": "BRAIN_TEST_PROVIDER_CACHE_KEY"}
    cache = ProviderCache()
    provider = cache.get("o", spec, environ={})
    with pytest.raises(ModelCallError, match="BRAIN_TEST_PROVIDER_CACHE_KEY"):
        provider.call({"messages": []}, lambda _: None, threading.Event())
