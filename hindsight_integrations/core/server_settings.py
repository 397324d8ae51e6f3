"""The HTTP server's settings: its defences, its per-namespace bounds, its rate limit and its logs.

Only a server reads them (``mcp/``), but they are validated with every other setting when
``config.Settings`` is built, which composes this class, so a bad ``HINDSIGHT_*`` value stops
the server at start-up with a message naming the variable. They live apart so that the
engine's settings and the server's each stay readable on their own.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

# A Host header value: a DNS name or IP literal (IPv6 in brackets), with an optional port or ":*" (any port).
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
HOST_PATTERN = re.compile(rf"(?:\[[0-9A-Fa-f:.]+\]|{_LABEL}(?:\.{_LABEL})*)(?::(?:\*|[0-9]{{1,5}}))?")
# A log level setting, in any case.
LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]


class ServerSettings(BaseSettings):
    """The HTTP server's settings, each ``HINDSIGHT_<FIELD>`` in the environment (``config.Settings`` has them)."""

    model_config = SettingsConfigDict(
        env_prefix="HINDSIGHT_", extra="ignore", validate_default=True, allow_inf_nan=False
    )

    # The HTTP server's defences (mcp/hosts.py, mcp/throttle.py, mcp/viewer.py; README "Security").
    # Host names the server answers besides the loopback ones (comma-separated: name, name:port, or name:*
    # for any port), for a server reached under a public name behind a reverse proxy. A server without
    # tokens, or bound to loopback, refuses every other Host header (DNS rebinding); with this set, so does
    # any server.
    allowed_hosts: Annotated[list[str], NoDecode] = Field(default_factory=list)
    # Failed authentications (a wrong bearer token, a wrong sign-in token) one client address may make
    # within the window; past that it gets 429 with Retry-After until the window has passed.
    auth_failure_limit: int = Field(10, ge=1, le=100_000)
    auth_failure_window_seconds: float = Field(60.0, gt=0, le=86_400)
    # How long a replica trusts that a viewer session it checked is not signed out: a sign-out on one replica
    # is refused by the others within this time (0: every request asks the store).
    session_revocation_cache_seconds: float = Field(2.0, ge=0, le=300)
    # Per namespace on a server with tokens (mcp/quota.py): requests in progress at once, and MCP sessions
    # open on a --stateful server. And how long any request's body may take to arrive (mcp/body_guard.py).
    max_requests_in_flight_per_namespace: int = Field(64, ge=1, le=100_000)
    max_sessions_per_namespace: int = Field(100, ge=1, le=10_000)
    # A --stateful server's MCP sessions in all, each namespace of the token map guaranteed an even share
    # (at most max_sessions_per_namespace); and how long a session may sit idle before the server ends it.
    max_sessions: int = Field(10_000, ge=1, le=1_000_000)
    session_idle_seconds: float = Field(1800.0, ge=10, le=86_400)
    body_timeout_seconds: float = Field(60.0, gt=0, le=3600)

    # The server process (mcp/startup.py). Tool calls a minute each namespace may make (mcp/observability.py
    # RateLimiter); unset or empty: no limit. 0 is refused rather than read as "no limit" or as "no calls".
    rate_limit: float | None = None
    # How much the JSON log on stderr says: the package's own lines, the MCP SDK's, and uvicorn's (HTTP).
    log_level: LogLevel = "INFO"
    mcp_sdk_log_level: LogLevel = "WARNING"
    uvicorn_log_level: Literal["critical", "error", "warning", "info", "debug", "trace"] = "warning"

    @field_validator("allowed_hosts", mode="before")
    @classmethod
    def _allowed_hosts(cls, value: object) -> object:
        items = value.split(",") if isinstance(value, str) else value
        if not isinstance(items, list | tuple):
            return value  # pydantic says what type it wanted
        hosts = []
        for item in items:
            host = str(item).strip()
            if not host:
                continue
            port = host.rpartition(":")[2] if not host.endswith("]") else ""
            if not HOST_PATTERN.fullmatch(host) or (port.isdigit() and not 0 < int(port) < 65536):
                raise ValueError(
                    f"{host!r} is not a host name like memory.example.com, memory.example.com:8443 or "
                    "memory.example.com:* (no scheme, no path; separate several with commas)"
                )
            hosts.append(host.lower())
        return hosts

    @field_validator("rate_limit", mode="before")
    @classmethod
    def _no_rate_limit(cls, value: object) -> object:
        return None if value == "" else value  # HINDSIGHT_RATE_LIMIT= (empty), as in a compose file: no limit

    @field_validator("rate_limit")
    @classmethod
    def _rate_limit(cls, value: float | None) -> float | None:
        if value is not None and value <= 0:
            raise ValueError(
                f"must be a number of tool calls a minute above 0, got {value:g}; "
                "for no limit set none (leave HINDSIGHT_RATE_LIMIT unset or empty, and --rate-limit out)"
            )
        return value

    @field_validator("log_level", "mcp_sdk_log_level", mode="before")
    @classmethod
    def _log_level(cls, value: object) -> object:
        return value.strip().upper() if isinstance(value, str) else value

    @field_validator("uvicorn_log_level", mode="before")
    @classmethod
    def _uvicorn_log_level(cls, value: object) -> object:
        return value.strip().lower() if isinstance(value, str) else value


__all__ = ["HOST_PATTERN", "LogLevel", "ServerSettings"]
