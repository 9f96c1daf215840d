"""Agentloop modules: identify them by content, compile each once, check the ABI up front.

A file may be a core module (the C ABI, checked here) or a component (the WIT world,
brain/agentloop/components.py); its first bytes tell which (brain/agentloop/kinds.py).

A module is known by the sha256 of its bytes, so a file replaced in place is noticed on the
next activation and an unchanged file is never recompiled. Compiled modules live in memory per
Engine; with a cache directory they are also stored serialized, so a new process deserializes
in microseconds instead of compiling (and never compiles after a fork at all, stack hazard 4).

The cache directory must belong to Brain alone: `Module.deserialize` trusts its input. A stored
artifact is loaded only when it matches its own length and checksum (artifacts.py): one torn by
a power cut is removed and compiled again.
"""

from __future__ import annotations

import hashlib
import os
import threading
from dataclasses import dataclass
from pathlib import Path

import wasmtime
from wasmtime import component as wc

from brain.agentloop.artifacts import is_stored, load_checked, store_artifact
from brain.agentloop.compile_cache import compile_once
from brain.agentloop.components import (
    CompiledComponent,
    artifact_name,
    check_world,
    compile_component,
    load_artifact,
)
from brain.agentloop.errors import loop_error
from brain.agentloop.kinds import COMPONENT, describe_header, guest_kind

# What the ABI requires of a module (docs/agentloop.md), as (params, results).
REQUIRED_FUNCS = {
    "brain_alloc": (["i32"], ["i32"]),
    "brain_activate": (["i32", "i32"], ["i64"]),
}
HOST_IMPORT = ("brain", "call", (["i32", "i32"], ["i64"]))
HOST_IMPORT_TEXT = "brain.call (func (param i32 i32) (result i64))"


def load_module_info(path: str | os.PathLike[str]) -> dict[str, str]:
    """`{"path", "sha256"}` of an Agentloop module file, for the session's configuration."""
    data = _read(path)
    return {"path": os.path.abspath(path), "sha256": hashlib.sha256(data).hexdigest()}


@dataclass(frozen=True)
class CompiledModule:
    sha256: str
    module: wasmtime.Module
    pre: wasmtime.InstancePre

    def artifact(self) -> tuple[str, wasmtime.Module | wc.Component]:
        return _cache_name(self.sha256), self.module


Compiled = CompiledModule | CompiledComponent


class ModuleCache:
    """Compiled, ABI-checked, pre-linked modules of one Engine, by content hash."""

    def __init__(self, engine: wasmtime.Engine, linker: wasmtime.Linker) -> None:
        self._engine = engine
        self._linker = linker
        self._lock = threading.Lock()
        self._by_sha: dict[str, Compiled] = {}
        # (path, stat identity) -> sha256: skips rehashing a file nobody has touched. Any write
        # changes ctime, so a changed file is always rehashed.
        self._hashes: dict[tuple[str, tuple[int, ...]], str] = {}
        self._stored: set[tuple[str, str]] = set()  # (sha256, cache_dir) known to be on disk

    def get(self, path: str | os.PathLike[str], cache_dir: str | None = None) -> Compiled:
        key, sha, data = self._identify(path)
        with self._lock:
            compiled = self._by_sha.get(sha)
            if compiled is None:
                if data is None:
                    data = _read(path)
                    sha = hashlib.sha256(data).hexdigest()
                compiled = self._by_sha.get(sha) or self._compile(path, data, sha, cache_dir)
                self._by_sha[sha] = compiled
            self._hashes[key] = sha
            if cache_dir is not None and (sha, cache_dir) not in self._stored:
                # Compiled before this cache directory was asked for (or by another runtime).
                name, artifact = compiled.artifact()
                if not is_stored(Path(cache_dir) / name):
                    store_serialized(artifact, cache_dir, name)
                self._stored.add((sha, cache_dir))
        return compiled

    def _identify(self, path: str | os.PathLike[str]) -> tuple[tuple, str, bytes | None]:
        try:
            st = os.stat(path)
        except OSError as exc:
            raise loop_error(f"cannot read Agentloop module {os.fspath(path)}: {exc}") from None
        key = (
            os.fspath(path),
            (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns),
        )
        sha = self._hashes.get(key)
        if sha is not None:
            return key, sha, None
        data = _read(path)
        return key, hashlib.sha256(data).hexdigest(), data

    def _compile(
        self, path: str | os.PathLike[str], data: bytes, sha: str, cache_dir: str | None
    ) -> Compiled:
        kind = guest_kind(data)
        if kind == COMPONENT:
            return self._compile_component(os.fspath(path), data, sha, cache_dir)
        if kind is None:
            raise loop_error(f"{os.fspath(path)} is not an Agentloop: {describe_header(data)}")
        module = _load_serialized(self._engine, cache_dir, sha)
        if module is None:
            try:
                module = wasmtime.Module(self._engine, data)
            except wasmtime.WasmtimeError as exc:
                raise loop_error(
                    f"{os.fspath(path)} is not a valid core Wasm module: {_first_line(exc)}"
                ) from None
            store_serialized(module, cache_dir, _cache_name(sha))
        check_abi(module, os.fspath(path))
        try:
            pre = self._linker.instantiate_pre(module)
        except wasmtime.WasmtimeError as exc:
            raise loop_error(f"{os.fspath(path)} cannot be linked: {_first_line(exc)}") from None
        return CompiledModule(sha, module, pre)

    def _compile_component(
        self, name: str, data: bytes, sha: str, cache_dir: str | None
    ) -> CompiledComponent:
        """Load the serialized component compiled ahead (by `brain serve` at start, or by
        `brain agentloop build` or `check`), or compile it here: seconds, on this one thread
        (stack hazard 4), only for a component nobody on this machine compiled yet."""
        component, _, _ = cached_component(self._engine, data, name, cache_dir, sha)
        check_world(self._engine, component, name)
        return CompiledComponent(sha, component)


def check_abi(module: wasmtime.Module, name: str) -> None:
    """Refuse a module that breaks the ABI, saying exactly what is missing or wrong."""
    exports = {export.name: export.type for export in module.exports}
    if not isinstance(exports.get("memory"), wasmtime.MemoryType):
        raise loop_error(f"{name} does not export its linear memory as `memory`")
    for func, signature in REQUIRED_FUNCS.items():
        ty = exports.get(func)
        if not isinstance(ty, wasmtime.FuncType):
            raise loop_error(f"{name} does not export {func} {_signature_text(signature)}")
        if _signature(ty) != signature:
            raise loop_error(
                f"{name} exports {func} as {_signature_text(_signature(ty))}, "
                f"expected {_signature_text(signature)}"
            )
    for imp in module.imports:
        want_module, want_name, want_sig = HOST_IMPORT
        ty = imp.type
        if (imp.module, imp.name) != (want_module, want_name):
            raise loop_error(
                f"{name} imports {imp.module}.{imp.name}, but Brain provides only "
                f"{HOST_IMPORT_TEXT}"
            )
        if not isinstance(ty, wasmtime.FuncType) or _signature(ty) != want_sig:
            raise loop_error(
                f"{name} imports brain.call with the wrong type; expected {HOST_IMPORT_TEXT}"
            )


def _signature(ty: wasmtime.FuncType) -> tuple[list[str], list[str]]:
    return [str(p) for p in ty.params], [str(r) for r in ty.results]


def _signature_text(signature: tuple[list[str], list[str]]) -> str:
    params, results = signature
    return f"(func (param {' '.join(params)}) (result {' '.join(results)}))"


def _first_line(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def _read(path: str | os.PathLike[str]) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise loop_error(f"cannot read Agentloop module {os.fspath(path)}: {exc}") from None


def _cache_name(sha: str) -> str:
    # wasmtime refuses bytes from another version or configuration; that is a cache miss.
    return f"{sha}-wasmtime.cwasm"


def _load_serialized(
    engine: wasmtime.Engine, cache_dir: str | None, sha: str
) -> wasmtime.Module | None:
    if cache_dir is None:
        return None
    path = Path(cache_dir) / _cache_name(sha)
    try:
        return load_checked(path, lambda name: wasmtime.Module.deserialize_file(engine, name))
    except wasmtime.WasmtimeError:
        return None  # another wasmtime or config: compile and overwrite


def store_serialized(
    module: wasmtime.Module | wc.Component, cache_dir: str | None, name: str
) -> None:
    """Best effort: a cache that cannot be written only costs a compile next time. Stored
    durably with its checksum (brain/agentloop/artifacts.py)."""
    if cache_dir is None:
        return
    try:
        store_artifact(module.serialize(), Path(cache_dir), name)
    except OSError:
        pass


def cached_component(engine: wasmtime.Engine, data: bytes, name: str, cache_dir: str | None,
                     sha: str | None = None) -> tuple[wc.Component, str, float]:
    """The compiled component of `data`: from the machine's cache when stored there, else
    compiled (announced on stderr) and stored (brain/agentloop/compile_cache.py). Returns it,
    "cached", "waited" or "compiled", and the seconds it took. Raises AgentloopError for bytes
    that are no valid component."""
    sha = sha or hashlib.sha256(data).hexdigest()
    label = Path(name).name
    if cache_dir is None:
        return compile_once(label, len(data), None, lambda _: None,
                            lambda: compile_component(engine, data, name))
    artifact = Path(cache_dir) / artifact_name(sha)

    def compile_and_store() -> wc.Component:
        component = compile_component(engine, data, name)
        store_serialized(component, cache_dir, artifact.name)
        return component

    return compile_once(label, len(data), artifact,
                        lambda path: load_artifact(engine, path), compile_and_store)
