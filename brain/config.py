"""Named parts (models, tools, environments, Agentloops) and create-body resolution.

A session's create body holds only names. They are resolved here, once, into the configuration
that `session_created` records; the session never reads the configuration file again, so later
edits to the file cannot change where an existing session's effects go.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from brain.agentloop.modules import load_module_info
from brain.errors import InvalidRequest

PART_KINDS = ("models", "tools", "environments", "agentloops")
MODEL_PROVIDERS = ("scripted", "openai", "anthropic")
TOOL_ROUTES = ("http", "host", "builtin", "environment")
ENVIRONMENT_KINDS = ("local", "host")
BUILTIN_AGENTLOOP_PREFIX = "builtin:"

CREATE_FIELDS = {
    "agentloop": str,
    "model": str,
    "tools": list,
    "environments": list,
    "transcript": list,
    "idle_ttl_ms": int,
    "metadata": dict,
}
DEFAULT_AGENTLOOP = "default"
DEFAULT_MODEL = "scripted"
MAX_IDLE_TTL_MS = 2**53 - 1  # Thespian's timers overflow near 8.6e16 ms; any JSON client reads this


class ConfigError(ValueError):
    """The configuration file is unusable; raised at start-up, never per request."""


@dataclass(frozen=True)
class BrainConfig:
    """The merged named parts: shipped defaults plus the BRAIN_CONFIG file."""

    models: dict[str, dict[str, Any]]
    tools: dict[str, dict[str, Any]]
    environments: dict[str, dict[str, Any]]
    agentloops: dict[str, dict[str, Any]]

    @classmethod
    def load(cls, path: Path | None = None) -> BrainConfig:
        merged: dict[str, dict[str, dict[str, Any]]] = {kind: {} for kind in PART_KINDS}
        shipped = resources.files("brain").joinpath("defaults.toml").read_text("utf-8")
        _merge(merged, tomllib.loads(shipped), "shipped defaults")
        if path is not None:
            try:
                data = tomllib.loads(Path(path).read_text("utf-8"))
            except (OSError, tomllib.TOMLDecodeError) as exc:
                raise ConfigError(f"cannot read BRAIN_CONFIG {path}: {exc}") from None
            _merge(merged, data, str(path), base_dir=Path(path).resolve().parent)
        config = cls(**merged)
        config.validate()
        return config

    def validate(self) -> None:
        from brain.models import make_provider

        for name, spec in self.models.items():
            if spec.get("provider") not in MODEL_PROVIDERS:
                raise ConfigError(f"models.{name}: provider must be one of {MODEL_PROVIDERS}")
            make_provider(name, {"name": name, **spec}, environ={})  # refuses a bad table now
        for name, spec in self.tools.items():
            if spec.get("route") not in TOOL_ROUTES:
                raise ConfigError(f"tools.{name}: route must be one of {TOOL_ROUTES}")
        for name, spec in self.environments.items():
            if spec.get("kind") not in ENVIRONMENT_KINDS:
                raise ConfigError(f"environments.{name}: kind must be one of {ENVIRONMENT_KINDS}")
        for name, spec in self.agentloops.items():
            if not isinstance(spec.get("path"), str):
                raise ConfigError(f"agentloops.{name}: path is required")
            if not agentloop_path(spec["path"]).is_file():
                raise ConfigError(f"agentloops.{name}: {spec['path']} is not a readable file")

    def resolve_create(self, body: dict[str, Any]) -> dict[str, Any]:
        """Turn a create body of names into the config recorded in session_created.

        Raises InvalidRequest naming the field for unknown fields, wrong types or unknown names.
        """
        for field, value in body.items():
            expected = CREATE_FIELDS.get(field)
            if expected is None:
                raise InvalidRequest(f"unknown field: {field}")
            if not isinstance(value, expected) or (expected is int and isinstance(value, bool)):
                raise InvalidRequest(f"{field}: expected {expected.__name__}")
        agentloop = body.get("agentloop", DEFAULT_AGENTLOOP)
        model = body.get("model", DEFAULT_MODEL)
        tools = body.get("tools", [])
        environments = body.get("environments", [])
        _require_names("agentloop", [agentloop], self.agentloops)
        _require_names("model", [model], self.models)
        _require_names("tools", tools, self.tools)
        _require_names("environments", environments, self.environments)
        idle_ttl_ms = body.get("idle_ttl_ms")
        if idle_ttl_ms is not None and not 0 <= idle_ttl_ms <= MAX_IDLE_TTL_MS:
            raise InvalidRequest(f"idle_ttl_ms: must be between 0 and {MAX_IDLE_TTL_MS}")
        loop = load_module_info(agentloop_path(self.agentloops[agentloop]["path"]))
        return {
            "agentloop": {"name": agentloop, "path": loop["path"], "sha256": loop["sha256"]},
            "model": {"name": model, **self.models[model]},
            "tools": [{"name": name, **self.tools[name]} for name in tools],
            "environments": [{"name": name, **self.environments[name]} for name in environments],
            "idle_ttl_ms": idle_ttl_ms,
            "metadata": body.get("metadata", {}),
        }


def agentloop_path(configured: str) -> Path:
    """`builtin:NAME` points at a module shipped inside the package."""
    if configured.startswith(BUILTIN_AGENTLOOP_PREFIX):
        name = configured[len(BUILTIN_AGENTLOOP_PREFIX):]
        return Path(str(resources.files("brain.agentloop").joinpath(f"{name}.wasm")))
    return Path(configured)


def _require_names(field: str, names: list[Any], known: dict[str, Any]) -> None:
    for name in names:
        if not isinstance(name, str):
            raise InvalidRequest(f"{field}: names must be strings")
        if name not in known:
            raise InvalidRequest(f"{field}: unknown name {name!r}")
    if len(set(names)) != len(names):
        raise InvalidRequest(f"{field}: names must not repeat")


def _resolve_relative_paths(kind: str, spec: dict[str, Any], base_dir: Path) -> None:
    """Paths in a configuration file mean the same wherever `brain serve` is started."""
    key = {"agentloops": "path", "models": "script_file"}.get(kind)
    value = spec.get(key) if key else None
    if not isinstance(value, str) or value.startswith(BUILTIN_AGENTLOOP_PREFIX):
        return
    spec[key] = str((base_dir / value).resolve())


def _merge(
    merged: dict[str, dict[str, dict[str, Any]]],
    data: dict[str, Any],
    origin: str,
    base_dir: Path | None = None,
) -> None:
    for kind, parts in data.items():
        if kind not in PART_KINDS:
            raise ConfigError(f"{origin}: unknown section [{kind}]")
        if not isinstance(parts, dict):
            raise ConfigError(f"{origin}: [{kind}] must be a table of named parts")
        for name, spec in parts.items():
            if not isinstance(spec, dict):
                raise ConfigError(f"{origin}: [{kind}.{name}] must be a table")
            spec = dict(spec)
            if base_dir is not None:
                _resolve_relative_paths(kind, spec, base_dir)
            merged[kind][name] = spec
