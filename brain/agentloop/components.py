"""Agentloop components: compile, check against the WIT world, keep serialized per wasmtime.

A component built from Python carries a whole interpreter (~18 MB), and compiling it takes
seconds, so it is never compiled where a turn waits: `brain agentloop build` compiles it right
away and `brain serve` compiles the configured ones as it starts (brain/agentloop/precompile.py),
each stored serialized in the machine's cache (brain/agentloop/compile_cache.py), named by the
file's sha256 and the wasmtime version, and every actor process maps that file
(`deserialize_file`, ~2 ms) instead. A file compiled by another wasmtime is a miss.

The world (brain/agentloop/wit/agentloop.wit) is checked when the component is loaded: it
must import `brain:agentloop/host@1.0.0` and nothing else (no WASI: the guest has no files,
network, environment, clock or randomness) and export `activate(string) -> string`.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import wasmtime
from wasmtime import component as wc

from brain.agentloop.artifacts import load_checked
from brain.agentloop.errors import loop_error

WORLD_PACKAGE = "brain:agentloop"
WORLD_VERSION = "1.0.0"
WORLD = f"{WORLD_PACKAGE}@{WORLD_VERSION}"
HOST_INTERFACE = f"{WORLD_PACKAGE}/host@{WORLD_VERSION}"
EXPORT = "activate"
WIT_PATH = Path(__file__).with_name("wit") / "agentloop.wit"
# componentize-py exports this interface of its own beside the world's exports.
IGNORED_EXPORTS = {"exports"}
REBUILD = "rebuild it with `brain agentloop build`"


@dataclass(frozen=True)
class CompiledComponent:
    sha256: str
    component: wc.Component

    def artifact(self) -> tuple[str, wc.Component]:
        """The file name it is stored under in a cache directory, and what to serialize."""
        return artifact_name(self.sha256), self.component


def wasmtime_version() -> str:
    try:
        return metadata.version("wasmtime")
    except metadata.PackageNotFoundError:  # pragma: no cover - a source checkout of wasmtime
        return "unknown"


def artifact_name(sha: str) -> str:
    """The serialized component's file name: the content and the wasmtime that compiled it."""
    return f"{sha}-component-wasmtime-{wasmtime_version()}.cwasm"


def compile_component(engine: wasmtime.Engine, data: bytes, name: str) -> wc.Component:
    try:
        return wc.Component(engine, data)
    except wasmtime.WasmtimeError as exc:
        raise loop_error(f"{name} is not a valid Wasm component: {_first_line(exc)}") from None


def load_artifact(engine: wasmtime.Engine, path: Path) -> wc.Component | None:
    """The compiled component stored at `path`, or None when missing, torn (it is removed:
    brain/agentloop/artifacts.py) or not loadable here."""
    try:
        return load_checked(path, lambda name: wc.Component.deserialize_file(engine, name))
    except wasmtime.WasmtimeError:
        return None


def world_problems(engine: wasmtime.Engine, component: wc.Component) -> list[str]:
    """Why `component` does not fit the world, one sentence each (empty when it fits)."""
    problems = []
    ty = component.type
    wasi = []
    for name in ty.imports(engine):
        if name == HOST_INTERFACE:
            continue
        if name.startswith(f"{WORLD_PACKAGE}/"):
            problems.append(f"it imports {name}, built for another version of the Agentloop "
                            f"world; this Brain provides {WORLD} ({REBUILD})")
        elif name.startswith("wasi:"):
            wasi.append(name)
        else:
            problems.append(f"it imports {name}, but Brain provides only {HOST_INTERFACE}")
    if wasi:
        more = f" and {len(wasi) - 1} more WASI interfaces" if len(wasi) > 1 else ""
        problems.append(f"it imports {wasi[0]}{more}, but Agentloops get no WASI (no files, "
                        f"network, environment, clock or randomness); {REBUILD}, which stubs "
                        f"WASI out")
    exports = ty.exports(engine)
    if EXPORT not in exports:
        found = ", ".join(sorted(set(exports) - IGNORED_EXPORTS)) or "nothing"
        problems.append(f"it does not export `{EXPORT}: func(payload: string) -> string` "
                        f"(it exports {found})")
    else:
        signature = _func_signature(exports[EXPORT])
        if signature != (["string"], "string"):
            problems.append(f"it exports `{EXPORT}` as {signature}, expected "
                            f"func(payload: string) -> string")
    return problems


def check_world(engine: wasmtime.Engine, component: wc.Component, name: str) -> None:
    problems = world_problems(engine, component)
    if problems:
        raise loop_error(f"{name} does not fit the Agentloop world {WORLD}: "
                         + "; ".join(problems))


def _func_signature(extern: object) -> tuple[list[str], str | None] | str:
    ty = getattr(extern, "ty", None)
    if not isinstance(ty, wc.FuncType):
        return type(ty).__name__
    params = [_type_name(p) for _, p in ty.params]
    result = None if ty.result is None else _type_name(ty.result)
    return params, result


def _type_name(ty: object) -> str:
    return "string" if isinstance(ty, wc.String) else type(ty).__name__


def _first_line(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
