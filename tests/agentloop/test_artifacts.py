"""Stored compiled Agentloops are loaded only whole: a torn or bit-flipped artifact is logged,
removed and compiled again, never handed to wasmtime's `deserialize_file`."""

from __future__ import annotations

import hashlib
import logging
import os
import stat
import time
from pathlib import Path

import pytest
import wasmtime
from wasmtime import component as wc

from brain.agentloop import AgentloopRuntime, load_module_info
from brain.agentloop.artifacts import store_artifact, sum_path, why_not_whole
from brain.agentloop.components import artifact_name, load_artifact
from brain.agentloop.modules import ModuleCache, _cache_name, _load_serialized
from brain.agentloop.precompile import needs_compiling
from tests.agentloop.helpers import FakeBrain, compile_guest


def truncate(path: Path) -> None:
    """What a power cut can leave after a rename whose file was not on disk yet."""
    os.truncate(path, path.stat().st_size // 2)


def flip_a_bit(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x10
    path.write_bytes(bytes(data))


DAMAGES = {"truncated": truncate, "bit-flipped": flip_a_bit}


@pytest.fixture
def deserialized(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every path wasmtime is asked to deserialize, module or component."""
    seen: list[str] = []
    real_module, real_component = wasmtime.Module.deserialize_file, wc.Component.deserialize_file

    def module(engine: wasmtime.Engine, path: str) -> wasmtime.Module:
        seen.append(path)
        return real_module(engine, path)

    def component(engine: wasmtime.Engine, path: str) -> wc.Component:
        seen.append(path)
        return real_component(engine, path)

    monkeypatch.setattr(wasmtime.Module, "deserialize_file", staticmethod(module))
    monkeypatch.setattr(wc.Component, "deserialize_file", staticmethod(component))
    return seen


def stored_core_module(tmp_path: Path) -> tuple[Path, Path]:
    """A core module compiled by a runtime with a cache: (the module file, its artifact)."""
    cache = tmp_path / "cache"
    guest = compile_guest("relay", tmp_path)
    run(AgentloopRuntime(cache_dir=cache), guest)
    artifact = cache / _cache_name(load_module_info(guest)["sha256"])
    assert artifact.is_file() and sum_path(artifact).is_file()
    return guest, artifact


def run(runtime: AgentloopRuntime, guest: Path) -> dict:
    return runtime.activate(guest, {"op": "telemetry.record"}, FakeBrain(), time.monotonic() + 10)


def test_an_artifact_is_stored_whole_private_and_with_its_checksum(tmp_path: Path) -> None:
    _, artifact = stored_core_module(tmp_path)
    assert why_not_whole(artifact) is None
    length, _ = sum_path(artifact).read_text().split()
    assert int(length) == artifact.stat().st_size
    for path in (artifact, sum_path(artifact)):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert sorted(p.name for p in artifact.parent.iterdir()) == \
        sorted([artifact.name, sum_path(artifact).name])  # no temporary left behind


@pytest.mark.parametrize("damage", DAMAGES)
def test_a_damaged_core_module_artifact_is_compiled_again_not_loaded(
        tmp_path: Path, damage: str, deserialized: list[str],
        caplog: pytest.LogCaptureFixture) -> None:
    guest, artifact = stored_core_module(tmp_path)
    DAMAGES[damage](artifact)
    deserialized.clear()
    engine = wasmtime.Engine(_engine_config())
    sha = load_module_info(guest)["sha256"]
    with caplog.at_level(logging.WARNING, "brain.agentloop"):
        assert _load_serialized(engine, str(artifact.parent), sha) is None
    assert deserialized == []  # never handed to wasmtime
    assert not artifact.exists() and not sum_path(artifact).exists()
    assert f"compiled Agentloop {artifact} is not loaded" in caplog.text

    # The next process's first use compiles and stores it again, whole; the one after loads it.
    another_process_modules().get(guest, str(artifact.parent))
    assert why_not_whole(artifact) is None
    assert _load_serialized(wasmtime.Engine(_engine_config()), str(artifact.parent),
                            sha) is not None
    assert deserialized == [str(artifact)]


def test_an_artifact_without_its_checksum_is_not_loaded(tmp_path: Path,
                                                        deserialized: list[str]) -> None:
    """A cache written by an older Brain (no `.sum`) is compiled again once."""
    guest, artifact = stored_core_module(tmp_path)
    sum_path(artifact).unlink()
    deserialized.clear()
    engine = wasmtime.Engine(_engine_config())
    assert _load_serialized(engine, str(artifact.parent), load_module_info(guest)["sha256"]) \
        is None
    assert deserialized == [] and not artifact.exists()


@pytest.mark.parametrize("damage", DAMAGES)
def test_a_damaged_component_artifact_is_not_loaded_and_is_compiled_again_at_start(
        tmp_path: Path, damage: str, deserialized: list[str]) -> None:
    source = tmp_path / "empty.wasm"
    source.write_bytes(bytes(wasmtime.wat2wasm("(component)")))
    engine = wasmtime.Engine()
    cache = tmp_path / "cache"
    artifact = cache / artifact_name(hashlib.sha256(source.read_bytes()).hexdigest())
    store_artifact(wc.Component(engine, source.read_bytes()).serialize(), cache, artifact.name)
    assert needs_compiling([str(source)], cache) == []
    assert load_artifact(engine, artifact) is not None

    DAMAGES[damage](artifact)
    deserialized.clear()
    assert needs_compiling([str(source)], cache) == [str(source)]  # the start compiles it
    assert load_artifact(engine, artifact) is None
    assert deserialized == [] and not artifact.exists()


def another_process_modules() -> ModuleCache:
    """The compiled-module cache of a process that has compiled nothing yet."""
    engine = wasmtime.Engine(_engine_config())
    linker = wasmtime.Linker(engine)
    call = wasmtime.FuncType([wasmtime.ValType.i32(), wasmtime.ValType.i32()],
                             [wasmtime.ValType.i64()])
    linker.define_func("brain", "call", call, lambda ptr, length: 0)
    return ModuleCache(engine, linker)


def _engine_config() -> wasmtime.Config:
    config = wasmtime.Config()
    config.parallel_compilation = False
    config.epoch_interruption = True
    return config
