"""The committed Agentloop modules are what tools/build_agentloops.sh builds from their sources.

brain/agentloop/default.wasm ships as package data and agentloops/examples/*.wasm are what the
tests run, so neither users nor the test suite need a C toolchain; these tests keep the
committed bytes honest. Without clang, the sources and modules are checked against the hashes in
agentloops/built.txt (a source edited without a rebuild fails here). With clang, a fresh build
must behave like the committed one, and be byte-equal to it when this clang is the one
agentloops/built.txt names (docs/decisions.md, "Committed Agentloop modules").
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import wasmtime

from brain.agentloop import DEFAULT_AGENTLOOP, AgentloopRuntime
from tests.agentloop.helpers import FakeBrain, assistant, payload, text, tool_call
from tests.support.guests import EXAMPLES, ROOT, example_guest

SCRIPT = ROOT / "tools" / "build_agentloops.sh"
RECORD = ROOT / "agentloops" / "built.txt"
CLANG = os.environ.get("CLANG", "clang")
REBUILD = "run tools/build_agentloops.sh (needs clang and lld) and commit the result"

needs_clang = pytest.mark.skipif(
    shutil.which(CLANG) is None or shutil.which("wasm-ld") is None,
    reason=f"{CLANG} and wasm-ld (Debian packages clang, lld) are not on PATH, so the modules "
    "cannot be rebuilt here; test_committed_modules_match_built_txt still checks them",
)


def committed_modules() -> dict[str, Path]:
    """Each module by its name in a build's OUT_DIR -> its committed file."""
    modules = {"default.wasm": DEFAULT_AGENTLOOP}
    for source in sorted(EXAMPLES.glob("*.c")):
        modules[f"examples/{source.stem}.wasm"] = source.with_suffix(".wasm")
    return modules


def read_record() -> tuple[str, dict[str, str]]:
    """agentloops/built.txt as (compiler, {repository path: sha256})."""
    compiler, hashes = "", {}
    for line in RECORD.read_text().splitlines():
        if line.startswith("# compiler: "):
            compiler = line.removeprefix("# compiler: ")
        elif line and not line.startswith("#"):
            digest, path = line.split(maxsplit=1)
            hashes[path] = digest
    return compiler, hashes


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_committed_modules_match_built_txt() -> None:
    compiler, recorded = read_record()
    assert compiler, "agentloops/built.txt names no compiler"
    inputs = [SCRIPT, *sorted((ROOT / "agentloops").glob("*/*.[ch]"))]
    expected = {str(p.relative_to(ROOT)) for p in [*inputs, *committed_modules().values()]}
    assert set(recorded) == expected, f"agentloops/built.txt lists other files: {REBUILD}"
    stale = [path for path, digest in recorded.items()
             if not (ROOT / path).is_file() or sha256(ROOT / path) != digest]
    assert not stale, f"changed since the committed modules were built: {stale}; {REBUILD}"


def test_documented_example_loop() -> None:
    loop = example_guest("turn_counter")
    runtime = AgentloopRuntime()
    brain = FakeBrain(replies=[assistant(text("Bonjour")), assistant(text('Encore "é"'))])
    first = runtime.activate(loop, payload("hello"), brain, time.monotonic() + 10)
    second = runtime.activate(loop, payload("again"), brain, time.monotonic() + 10)
    assert first == {"status": "completed", "output": "#1: Bonjour"}
    assert second == {"status": "completed", "output": '#2: Encore "é"'}
    assert brain.kv == {"turns": 2}
    assert brain.requests[2] == {
        "op": "model.call",
        "tools": [],
        "messages": [{"role": "user", "content": [text("hello")]}],
    }


# What each module is asked, to compare a fresh build's behaviour with the committed one's:
# a fake Brain (kept across the activations) and the turn inputs, in order.
def _default_brain() -> FakeBrain:
    asks = assistant(text("Let me look."), tool_call("c1", "lookup", {"word": "brain"}))
    return FakeBrain(replies=[asks, assistant(text("Done.")), assistant(text("Again"))])


SCENARIOS: dict[str, tuple[Callable[[], FakeBrain], list[Any]]] = {
    "default.wasm": (_default_brain, ["hi", [text("more")], 42]),
    "examples/turn_counter.wasm": (
        lambda: FakeBrain(replies=[assistant(text("Bonjour")), assistant(text("é\n"))]),
        ["hello", "again", ["not text"]],
    ),
    "examples/host_script.wasm": (
        FakeBrain,
        [json.dumps([{"op": "kv.put", "key": "k", "value": [1, "two"]},
                     {"op": "kv.read", "key": "k"}, {"op": "events.emit", "events": []},
                     {"op": "no.such"}]), "[]", "not an array"],
    ),
}


def behaviour(module: Path, name: str) -> dict[str, Any]:
    """Every result and host request of `name`'s scenario run against `module`."""
    assert name in SCENARIOS, f"add a scenario for {name} to SCENARIOS"
    make_brain, inputs = SCENARIOS[name]
    brain, runtime = make_brain(), AgentloopRuntime()
    results = [runtime.activate(module, payload(i), brain, time.monotonic() + 10) for i in inputs]
    return {"results": results, "requests": brain.requests, "kv": brain.kv}


def interface(module: Path) -> dict[str, list[tuple[str, ...]]]:
    """Imports and exports with their kinds and function signatures (memory sizes vary)."""
    parsed = wasmtime.Module(wasmtime.Engine(), module.read_bytes())

    def kind(extern: Any) -> tuple[str, ...]:
        if isinstance(extern, wasmtime.FuncType):
            return ("func", *map(str, extern.params), "->", *map(str, extern.results))
        return (type(extern).__name__,)

    return {
        "imports": [(i.module, i.name or "", *kind(i.type)) for i in parsed.imports],
        "exports": [(e.name, *kind(e.type)) for e in parsed.exports],
    }


def build(out: Path) -> Path:
    subprocess.run(["sh", str(SCRIPT), str(out)], check=True, timeout=120, capture_output=True)
    return out


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build(tmp_path_factory.mktemp("agentloops"))


@needs_clang
def test_build_is_reproducible(built: Path, tmp_path: Path) -> None:
    again = build(tmp_path)
    for name in committed_modules():
        assert (built / name).read_bytes() == (again / name).read_bytes(), f"{name} is not stable"


@needs_clang
def test_committed_modules_behave_like_a_fresh_build(built: Path) -> None:
    for name, committed in committed_modules().items():
        assert interface(built / name) == interface(committed), f"{name}: {REBUILD}"
        assert behaviour(built / name, name) == behaviour(committed, name), f"{name}: {REBUILD}"


@needs_clang
def test_committed_modules_are_byte_equal_to_a_fresh_build(built: Path) -> None:
    here = subprocess.run([CLANG, "--version"], capture_output=True, text=True,
                          timeout=30).stdout.splitlines()[0]
    pinned, _ = read_record()
    if here != pinned:
        pytest.skip(f"this clang is {here!r}, the committed modules were built with {pinned!r}: "
                    "only that version reproduces them byte for byte")
    for name, committed in committed_modules().items():
        assert (built / name).read_bytes() == committed.read_bytes(), f"{name}: {REBUILD}"
