"""Every BRAIN_* setting, declared once.

Like gunicorn's config module, each setting names its environment variable, default, parser and
help text here, and every other module reads the one `Settings` object. `brain settings --markdown`
renders the docs table from these declarations, so docs and code cannot drift apart.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any


class SettingError(ValueError):
    """A BRAIN_* variable holds a value its parser refuses."""


def _non_negative_int(raw: str) -> int:
    value = int(raw)
    if value < 0:
        raise ValueError("must be >= 0")
    return value


def _niceness(raw: str) -> int:
    value = int(raw)
    if not 0 <= value <= 19:
        raise ValueError("must be 0-19 (a niceness added to the process's own)")
    return value


def _positive_int(raw: str) -> int:
    value = int(raw)
    if value <= 0:
        raise ValueError("must be > 0")
    return value


def _host_environment_secs(raw: str) -> int:
    value = int(raw)
    if not 1 <= value <= MAX_HOST_ENVIRONMENT_SECS:
        raise ValueError(f"must be between 1 and {MAX_HOST_ENVIRONMENT_SECS}")
    return value


MAX_HOST_ENVIRONMENT_SECS = 45
"""Below the 60 s a create waits for its session: setup with no host still answers in time."""


def _listen(raw: str) -> str:
    host, sep, port = raw.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) < 65536:
        raise ValueError("expected HOST:PORT")
    if int(port) == 0:
        # `brain serve` announces, and checks readiness on, the port it was given; gunicorn's
        # choice of a free port is not reported back to it, so port 0 could never be ready.
        raise ValueError("expected HOST:PORT with a port other than 0 (name a free port)")
    return raw


def _flag(raw: str) -> bool:
    if raw.lower() in ("1", "true", "yes", "on"):
        return True
    if raw.lower() in ("0", "false", "no", "off"):
        return False
    raise ValueError("expected 1 or 0")


def _log_format(raw: str) -> str:
    if raw.strip().lower() not in ("text", "json"):
        raise ValueError("expected text or json")
    return raw.strip().lower()
def _member_name(raw: str) -> str:
    if not MEMBER_NAME.fullmatch(raw):
        raise ValueError("expected 1-16 lowercase letters and digits")
    return raw


MEMBER_NAME = re.compile(r"[a-z0-9]{1,16}")
"""A convention member's name; it ends the id of every session the member holds."""


def _url(raw: str) -> str:
    if not raw.startswith(("http://", "https://")):
        raise ValueError("expected an http:// or https:// URL")
    return raw.rstrip("/")


def _optional_path(raw: str) -> Path | None:
    return Path(raw) if raw else None


def _webhook_url(raw: str) -> str:
    """An http(s) URL with a host, kept as written (its path is the receiver's)."""
    from urllib.parse import urlsplit

    parts = urlsplit(raw)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("expected an http:// or https:// URL")
    try:
        parts.port  # noqa: B018 (a bad port raises)
    except ValueError:
        raise ValueError("the URL's port is not a number from 0 to 65535") from None
    return raw


def _webhook_secret(raw: str) -> str:
    """`whsec_` and the base64 of the HMAC key (the Standard Webhooks form). Its errors never
    quote it."""
    from brain.net.webhook_signature import secret_key

    secret_key(raw)
    return raw


@dataclass(frozen=True)
class Setting:
    """One declared setting: the single place its name, default and meaning live."""

    attr: str
    env: str
    default: Any
    parse: Callable[[str], Any]
    help: str
    default_text: str | None = None
    secret: bool = False  # never quoted: not in an error, not in a repr


SETTINGS: tuple[Setting, ...] = (
    Setting("data_dir", "BRAIN_DATA_DIR", "./brain-data", str, "all durable state"),
    Setting("listen", "BRAIN_LISTEN", "127.0.0.1:3210", _listen,
            "HTTP bind (`HOST:PORT`; port 0 is refused: `brain serve` must know the port it "
            "announces)"),
    Setting(
        "api_token",
        "BRAIN_API_TOKEN",
        None,
        str,
        "operator bearer token",
        "generated into `$BRAIN_DATA_DIR/operator.token` (mode 0600)",
    ),
    Setting("max_model_calls", "BRAIN_MAX_MODEL_CALLS", 128, _non_negative_int,
            "model calls per turn; 0 = no bound"),
    Setting("max_turn_secs", "BRAIN_MAX_TURN_SECS", 1800, _non_negative_int,
            "wall time per turn; 0 = no bound"),
    Setting("max_tool_secs", "BRAIN_MAX_TOOL_SECS", 300, _non_negative_int,
            "deadline handed to every Tool call; 0 = no bound"),
    Setting("agentloop_cache", "BRAIN_AGENTLOOP_CACHE", None, Path,
            "the machine's cache of compiled Agentloop components, which `brain serve`, "
            "`brain agentloop build`/`check` and `brain replay` share (private to its user)",
            "`$XDG_CACHE_HOME/brain/agentloops`, else `~/.cache/brain/agentloops`"),
    Setting("compute_warn_secs", "BRAIN_COMPUTE_WARN_SECS", 60, _non_negative_int,
            "a turn whose Agentloop is computing (not waiting on a model, Tool or Brain) this "
            "long is named once in the server log, at warning level; 0 = never"),
    Setting("host_environment_secs", "BRAIN_HOST_ENVIRONMENT_SECS", 30, _host_environment_secs,
            "deadline of a host Environment's setup, detach and teardown (1-45)"),
    Setting("max_emitted_bytes", "BRAIN_MAX_EMITTED_BYTES", 1 << 20, _non_negative_int,
            "extension Event bytes per turn (kinds + serialized payloads); over it the turn "
            "fails with `emit_limit`; 0 = no bound"),
    Setting("session_idle_ttl_ms", "BRAIN_SESSION_IDLE_TTL_MS", None, _non_negative_int,
            "server-wide idle TTL; unset = release at once; 0 = retain forever", "unset"),
    Setting("session_pool_size", "BRAIN_SESSION_POOL_SIZE", 8, _non_negative_int,
            "idle session actors kept forked and warm, handed to sessions as they open; "
            "0 = fork one per open"),
    Setting("session_actor_sessions", "BRAIN_SESSION_ACTOR_SESSIONS", 2000, _non_negative_int,
            "sessions one pooled session actor serves before it exits and a fresh fork takes "
            "its place; 0 = never recycled"),
    Setting("session_actor_nice", "BRAIN_SESSION_ACTOR_NICE", 5, _niceness,
            "niceness each session actor adds to its own (0-19): while turns compute on every "
            "CPU, web workers, the registry and executors still answer at once"),
    Setting("max_session_actors", "BRAIN_MAX_SESSION_ACTORS", 64, _positive_int,
            "sessions served by an actor at once (each a process): turns whose Agentloop "
            "computes and sessions an idle TTL keeps resident (a turn waiting on a model or "
            "Tool holds none); past 4 per CPU more are forked only while a CPU idles; beyond "
            "it commands wait in the admission backlog"),
    Setting("admission_backlog", "BRAIN_ADMISSION_BACKLOG", None, _non_negative_int,
            "sessions whose admitted turns or commands may wait for an actor; beyond it new "
            "work is refused with 503 `overloaded` and Retry-After; unset = bounded by the "
            "memory budget alone", "unset"),
    Setting("admission_wait_secs", "BRAIN_ADMISSION_WAIT_SECS", 60, _positive_int,
            "how long a command (a sync send, an end, ...) waits in the backlog for an actor "
            "before it is refused with 503 `overloaded`; admitted turns always run"),
    Setting("memory_reserve_mb", "BRAIN_MEMORY_RESERVE_MB", None, _non_negative_int,
            "the memory budget: when the memory left to Brain (MemAvailable, or its cgroup's "
            "memory.max less its use) falls below this many MiB, new sessions and turns are "
            "refused with 503 `overloaded` and Retry-After; unset = 5% of the machine's "
            "memory, at least 256; 0 = never refused for memory", "unset"),
    Setting("suspend_after_ms", "BRAIN_SUSPEND_AFTER_MS", 50, _non_negative_int,
            "how long a turn's model or Tool call may run before its turn is suspended (the "
            "Agentloop's instance dropped and its actor let go, to resume by replay when the "
            "outcome comes); 0: at once. A call starts suspended while work waits for an actor"),
    Setting("drain_secs", "BRAIN_DRAIN_SECS", 60, _non_negative_int,
            "how long SIGTERM drain waits for admitted work"),
    Setting("trace", "BRAIN_TRACE", None, _optional_path,
            "file that receives one JSON line per message sent or received by every actor and "
            "web worker, and per journal commit (docs/operations.md, \"Tracing\")", "unset"),
    Setting("trace_all", "BRAIN_TRACE_ALL", False, _flag,
            "with BRAIN_TRACE: trace housekeeping too (metrics flushes, watch wake-ups, pool "
            "refills, probes)"),
    Setting("otel", "BRAIN_OTEL", False, _flag,
            "export OpenTelemetry spans (HTTP requests, turns, activations, effects, journal "
            "commits) over OTLP/HTTP to OTEL_EXPORTER_OTLP_ENDPOINT; needs the `otel` extra "
            "(docs/operations.md, \"Tracing with OpenTelemetry\")"),
    Setting("log_format", "BRAIN_LOG_FORMAT", "text", _log_format,
            "`text` (lines for a terminal) or `json` (one object a line, with request id, "
            "session id and sequence where known)"),
    Setting("telemetry_sink", "BRAIN_TELEMETRY_SINK", None, _optional_path,
            "where Agentloop telemetry goes (a JSON-lines file); unset = dropped", "unset"),
    Setting("webhook_url", "BRAIN_WEBHOOK_URL", None, _webhook_url,
            "where Brain POSTs `{session_id, sequence, kind, status}` when a turn ends, fails "
            "or is interrupted, signed by the Standard Webhooks convention, at least once "
            "(docs/operations.md, \"Webhooks\"); needs BRAIN_WEBHOOK_SECRET; unset = none",
            "unset"),
    Setting("webhook_secret", "BRAIN_WEBHOOK_SECRET", None, _webhook_secret,
            "the webhook signing secret, `whsec_` and a base64 key; never journaled, logged "
            "nor shown", "unset", secret=True),
    Setting("webhook_attempts", "BRAIN_WEBHOOK_ATTEMPTS", 8, _positive_int,
            "attempts of one webhook delivery before it is abandoned (recorded in the journal)"),
    Setting("webhook_retry_ms", "BRAIN_WEBHOOK_RETRY_MS", 1000, _positive_int,
            "pause after a webhook delivery's first failed attempt; doubled after each further "
            "one, up to BRAIN_WEBHOOK_RETRY_MAX_MS"),
    Setting("webhook_retry_max_ms", "BRAIN_WEBHOOK_RETRY_MAX_MS", 60000, _positive_int,
            "the longest pause between two attempts of a webhook delivery"),
    Setting("webhook_timeout_ms", "BRAIN_WEBHOOK_TIMEOUT_MS", 5000, _positive_int,
            "how long one webhook attempt may take (connect, send, the answer's head); longer "
            "counts as a failed attempt"),
    Setting("config", "BRAIN_CONFIG", None, _optional_path,
            "TOML file whose named parts are added to the shipped defaults",
            "`conf/brain.toml` if present"),
    Setting("actor_port", "BRAIN_ACTOR_PORT", None, _positive_int,
            "TCP port of the Thespian admin (bound to BRAIN_ACTOR_BIND); a port set here and "
            "taken stops `brain serve` with exit code 2",
            "unset: a free port, chosen at each start and recorded in "
            "`$BRAIN_DATA_DIR/run/actor.json`"),
    Setting("actor_bind", "BRAIN_ACTOR_BIND", "127.0.0.1", str,
            "address every Thespian socket binds to; loopback unless a private convention network"),
    Setting("member", "BRAIN_MEMBER", None, _member_name,
            "this server's name in a convention of several hosts (docs/several-hosts.md); "
            "unset = a single host, with no convention", "unset"),
    Setting("convention", "BRAIN_CONVENTION", None, _listen,
            "HOST:PORT of the convention leader's actor admin (the leader names its own "
            "BRAIN_ACTOR_BIND:BRAIN_ACTOR_PORT); required with BRAIN_MEMBER", "unset"),
    Setting("member_url", "BRAIN_MEMBER_URL", None, _url,
            "the URL other members forward this member's sessions to",
            "`http://` + BRAIN_LISTEN"),
    Setting("actor_secret_file", "BRAIN_ACTOR_SECRET_FILE", None, _optional_path,
            "file holding the key every actor message is signed with (at least 32 bytes; refused "
            "if every user may read it); a message without its signature is dropped unread. Set "
            "it to one file copied to every member of a convention (docs/several-hosts.md)",
            "`$BRAIN_DATA_DIR/actor.secret`, 32 random bytes generated at the first start "
            "(mode 0600)"),
    Setting("web_workers", "BRAIN_WEB_WORKERS", 2, _positive_int, "gunicorn gevent workers"),
    Setting("agentloop_memory_mb", "BRAIN_AGENTLOOP_MEMORY_MB", 256, _positive_int,
            "linear memory limit of one Agentloop instance"),
    Setting("segment_bytes", "BRAIN_SEGMENT_BYTES", 64 << 20, _positive_int,
            "journal segment size before a new segment is started"),
    Setting("boot_id", "BRAIN_BOOT_ID", None, str,
            "set by `brain serve` for its children (and by `brain web` from the actor system's "
            "`run/actor.json`): which start an idempotency claim and the actor system belong to",
            "generated per start"),
    Setting("test_pause_after_claim_secs", "BRAIN_TEST_PAUSE_AFTER_CLAIM_SECS", 0,
            _non_negative_int,
            "test hook: seconds a request sleeps between its idempotency claim and its work"),
    Setting("test_fail_fsync", "BRAIN_TEST_FAIL_FSYNC", None, _optional_path,
            "test hook: a trigger file; while it exists, the next journal fdatasync of a "
            "session whose path contains its text fails (read by the journal writer itself)",
            "unset"),
)


@dataclass(frozen=True)
class Settings:
    """Resolved settings; build with `Settings.from_env()`."""

    data_dir: str
    listen: str
    api_token: str | None
    max_model_calls: int
    max_turn_secs: int
    compute_warn_secs: int
    agentloop_cache: Path | None
    max_tool_secs: int
    host_environment_secs: int
    max_emitted_bytes: int
    session_idle_ttl_ms: int | None
    session_pool_size: int
    session_actor_sessions: int
    session_actor_nice: int
    max_session_actors: int
    admission_backlog: int | None
    admission_wait_secs: int
    suspend_after_ms: int
    memory_reserve_mb: int | None
    drain_secs: int
    trace: Path | None
    trace_all: bool
    otel: bool
    log_format: str
    telemetry_sink: Path | None
    webhook_url: str | None
    webhook_secret: str | None = field(repr=False)
    webhook_attempts: int
    webhook_retry_ms: int
    webhook_retry_max_ms: int
    webhook_timeout_ms: int
    config: Path | None
    actor_port: int | None
    actor_bind: str
    member: str | None
    convention: str | None
    member_url: str | None
    actor_secret_file: Path | None
    web_workers: int
    agentloop_memory_mb: int
    segment_bytes: int
    boot_id: str | None
    test_pause_after_claim_secs: int
    test_fail_fsync: Path | None

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        environ = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for setting in SETTINGS:
            raw = environ.get(setting.env)
            if raw is None or raw == "":
                values[setting.attr] = setting.default
                continue
            try:
                values[setting.attr] = setting.parse(raw)
            except ValueError as exc:
                shown = "(hidden)" if setting.secret else repr(raw)
                raise SettingError(f"{setting.env}={shown}: {exc}") from None
        if (values["member"] is None) != (values["convention"] is None):
            raise SettingError("BRAIN_MEMBER and BRAIN_CONVENTION are set together or not at all")
        if values["webhook_url"] is not None and values["webhook_secret"] is None:
            raise SettingError("BRAIN_WEBHOOK_URL needs BRAIN_WEBHOOK_SECRET: Brain sends no "
                               "unsigned webhook")
        return cls(**values)

    @cached_property
    def data_path(self) -> Path:
        """The data dir, resolved once per Settings (a syscall per path component, and every
        request and session open asks)."""
        return Path(self.data_dir).resolve()

    @property
    def sessions_path(self) -> Path:
        return self.data_path / "sessions"

    @property
    def environments_path(self) -> Path:
        """Local Environment working trees: `{session_id}/{name}/` below it."""
        return self.data_path / "environments"

    @property
    def front_end_url(self) -> str:
        """The URL this server's HTTP front end is reached at by the other members."""
        return self.member_url or f"http://{self.listen}"

    @property
    def listen_host_port(self) -> tuple[str, int]:
        host, _, port = self.listen.rpartition(":")
        return host, int(port)


def markdown_table() -> str:
    """The settings table for docs/configuration.md, rendered from the declarations."""
    rows = ["| variable | default | meaning |", "|---|---|---|"]
    for s in SETTINGS:
        default = s.default_text if s.default_text is not None else f"`{s.default}`"
        rows.append(f"| {s.env} | {default} | {s.help} |")
    return "\n".join(rows) + "\n"
