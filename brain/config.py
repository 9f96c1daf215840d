"""Named parts (models, tools, environments, Agentloops) and create-body resolution.

A session's create body holds only names. They are resolved here, once, into the configuration
that `session_created` records; the session never reads the configuration file again, so later
edits to the file cannot change where an existing session's effects go.
"""

from __future__ import annotations

import importlib.util
import tomllib
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from importlib import resources
from pathlib import Path
from typing import Any

from brain.errors import ConfigError, InvalidRequest
from brain.models import make_provider
from brain.tools.builtins import BUILTINS
from brain.tools.http_route import Target
from brain.tools.mcp.create import CREATE_FIELDS as MCP_CREATE_FIELDS
from brain.tools.mcp.servers import server_problem
from brain.tools.run import TOOL_ENVIRONMENT_OPS

PART_KINDS = ("models", "tools", "environments", "agentloops", "mcp_servers")
MODEL_PROVIDERS = ("scripted", "openai", "anthropic")
TOOL_ROUTES = ("http", "host", "builtin", "environment")
"""Routes an operator may configure; `mcp` Tools come from `[mcp_servers]` (brain/tools/mcp/)."""
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
    "limits": dict,  # lower turn limits: checked and recorded by brain/sessions/asked_limits.py
    **MCP_CREATE_FIELDS,  # read by brain/tools/mcp/create.py, once the names are resolved
}
MESSAGE_ROLES = ("user", "assistant", "tool", "system")  # the roles every model provider maps
DEFAULT_AGENTLOOP = "default"
DEFAULT_MODEL = "scripted"
MAX_IDLE_TTL_MS = 2**53 - 1  # Thespian's timers overflow near 8.6e16 ms; any JSON client reads this


@dataclass(frozen=True)
class BrainConfig:
    """The merged named parts: shipped defaults plus the BRAIN_CONFIG file."""

    models: dict[str, dict[str, Any]]
    tools: dict[str, dict[str, Any]]
    environments: dict[str, dict[str, Any]]
    agentloops: dict[str, dict[str, Any]]
    mcp_servers: dict[str, dict[str, Any]] = dataclass_field(default_factory=dict)

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
        for name, spec in self.models.items():
            if spec.get("provider") not in MODEL_PROVIDERS:
                raise ConfigError(f"models.{name}: provider must be one of {MODEL_PROVIDERS}")
            make_provider(name, {"name": name, **spec}, environ={})  # refuses a bad table now
        for name, spec in self.tools.items():
            if spec.get("route") not in TOOL_ROUTES:
                raise ConfigError(f"tools.{name}: route must be one of {TOOL_ROUTES}")
            problem = _tool_target_problem(spec, self.environments)
            if problem is not None:
                raise ConfigError(f"tools.{name}: {problem}")
        for name, spec in self.environments.items():
            if spec.get("kind") not in ENVIRONMENT_KINDS:
                raise ConfigError(f"environments.{name}: kind must be one of {ENVIRONMENT_KINDS}")
        if self.mcp_servers and importlib.util.find_spec("mcp") is None:
            raise ConfigError("mcp_servers: the MCP SDK is not installed "
                              "(pip install 'brain[mcp]')")
        for name, spec in self.mcp_servers.items():
            problem = server_problem(name, spec)
            if problem is not None:
                raise ConfigError(f"mcp_servers.{name}: {problem}")
        for name in self.tools:
            server, dot, _ = name.partition(".")
            if dot and server in self.mcp_servers:
                raise ConfigError(f"tools.{name}: the name is taken by MCP server {server}'s "
                                  "tools (server.tool)")
        for name, spec in self.agentloops.items():
            if not isinstance(spec.get("path"), str):
                raise ConfigError(f"agentloops.{name}: path is required")
            if not agentloop_path(spec["path"]).is_file():
                raise ConfigError(f"agentloops.{name}: {spec['path']} is not a readable file")

    def resolve_create(self, body: dict[str, Any]) -> dict[str, Any]:
        """Turn a create body of names into the config recorded in session_created.

        Raises InvalidRequest naming the field for unknown fields, wrong types, unknown names
        or a seed transcript item that is not a message. Every field is optional, and a null
        field is taken as absent (docs/decisions.md, Create).
        """
        for field in body:
            if field not in CREATE_FIELDS:
                raise InvalidRequest(f"unknown field: {field}")
        body = _given(body)
        for field, value in body.items():
            expected = CREATE_FIELDS[field]
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
        seed_transcript(body)
        from brain.agentloop.modules import load_module_info  # wasmtime: not at import

        loop = load_module_info(agentloop_path(self.agentloops[agentloop]["path"]))
        return {
            "agentloop": {"name": agentloop, "path": loop["path"], "sha256": loop["sha256"]},
            "model": {"name": model, **self.models[model]},
            "tools": [{"name": name, **self.tools[name]} for name in tools],
            "environments": [{"name": name, **self.environments[name]} for name in environments],
            "idle_ttl_ms": idle_ttl_ms,
            "metadata": body.get("metadata", {}),
        }


def seed_transcript(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The create body's `transcript` as the messages to seed, [] when absent or null.

    Each item must be a message as the model providers read it, so that a bad seed is refused
    at create (400 naming the item) rather than failing every later model call.
    """
    transcript = body.get("transcript")
    if transcript is None:
        return []
    if not isinstance(transcript, list):
        raise InvalidRequest("transcript: expected list")
    for index, item in enumerate(transcript):
        problem = _message_problem(item)
        if problem is not None:
            raise InvalidRequest(f"transcript[{index}]: {problem}")
    return transcript


def _given(body: dict[str, Any]) -> dict[str, Any]:
    """The fields a create body really gives: a null optional field means "use the default"."""
    return {field: value for field, value in body.items() if value is not None}


def _message_problem(item: Any) -> str | None:
    """Why `item` is not a message `{role, content}`, or None when it is one."""
    if not isinstance(item, dict):
        return "expected a message object {role, content}"
    if item.get("role") not in MESSAGE_ROLES:
        return f"role must be one of {', '.join(MESSAGE_ROLES)}"
    if not _is_content(item.get("content")):
        return "content must be a string or a list of content blocks (objects with a string type)"
    return None


def _is_content(content: Any) -> bool:
    """A string, or content blocks: the same rule as a message's `input`."""
    if isinstance(content, str):
        return True
    return isinstance(content, list) and all(
        isinstance(block, dict) and isinstance(block.get("type"), str) for block in content
    )


def _tool_target_problem(spec: dict[str, Any], environments: dict[str, Any]) -> str | None:
    """Why a Tool's route target can never work, or None: found at load, not at the first call.

    The rules are the routes' own (brain/tools/run.py), so load refuses exactly what a call
    would fail on for want of configuration.
    """
    route = spec.get("route")
    if route == "http":
        return _http_target_problem(spec.get("url"))
    if route == "builtin" and not _names(spec.get("function"), BUILTINS):
        return f"no builtin function {spec.get('function')!r} (one of {', '.join(BUILTINS)})"
    if route == "environment":
        if not _names(spec.get("environment"), environments):
            return f"environment {spec.get('environment')!r} is not configured"
        if spec.get("op") not in TOOL_ENVIRONMENT_OPS:
            return f"op must be one of {', '.join(TOOL_ENVIRONMENT_OPS)}"
    return None


def _names(value: Any, known: dict[str, Any]) -> bool:
    """Whether `value` is one of the `known` names (a TOML array or table never is)."""
    return isinstance(value, str) and value in known


def _http_target_problem(url: Any) -> str | None:
    """The http route's own URL check; its refusal carries the message a call would report."""
    try:
        Target.parse(url)
    except Exception as refused:  # the route's private "stop" exception, with its message
        return str(refused)
    return None


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
