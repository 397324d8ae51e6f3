"""Where the server listens: its transport, bind address and port, decided in one place for every way to start it.

``hindsight serve`` and ``python -m hindsight_integrations.mcp`` both call ``listening``: an
option given on the command line wins, else ``HINDSIGHT_MCP_TRANSPORT`` / ``HINDSIGHT_MCP_HOST``
/ ``HINDSIGHT_MCP_PORT`` (an MCP host config or a container sets those), else the defaults. Each
value is checked here, before the model loads, and a refusal names the option or the variable
it came from, so the user fixes the right one.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from ..core.errors import ConfigurationError, InvalidInputError
from .hosts import bind_address_problem

TRANSPORTS = ("stdio", "http")
DEFAULT_TRANSPORT = "stdio"
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765


@dataclass(frozen=True)
class Listening:
    """A checked transport, bind address and port (the last two matter over HTTP only)."""

    transport: str
    host: str
    port: int


def listening(
    *,
    transport: str | None = None,
    host: str | None = None,
    port: int | None = None,
    environ: Mapping[str, str] | None = None,
) -> Listening:
    """The options given (None: not given), else the ``HINDSIGHT_MCP_*`` variables, else the defaults; all checked.

    An empty variable counts as unset, as a compose file leaves it: an empty host is not
    "every interface" (that is asked for as 0.0.0.0).
    """
    env = os.environ if environ is None else environ
    return Listening(
        transport=_transport(transport, env.get("HINDSIGHT_MCP_TRANSPORT") or ""),
        host=_host(host, env.get("HINDSIGHT_MCP_HOST") or ""),
        port=_port(port, env.get("HINDSIGHT_MCP_PORT") or ""),
    )


def _transport(option: str | None, variable: str) -> str:
    if option is not None:
        if option not in TRANSPORTS:
            raise InvalidInputError("--transport", f"{option!r} is not a transport: use stdio or http")
        return option
    value = variable or DEFAULT_TRANSPORT
    if value not in TRANSPORTS:
        raise ConfigurationError(f"HINDSIGHT_MCP_TRANSPORT={value!r} is not a transport: use stdio or http")
    return value


def _host(option: str | None, variable: str) -> str:
    if option is not None:
        if problem := bind_address_problem(option):
            raise InvalidInputError("--host", f"{option!r} {problem}")
        return option
    value = variable or DEFAULT_HOST
    if problem := bind_address_problem(value):
        raise ConfigurationError(f"HINDSIGHT_MCP_HOST={value!r} {problem}")
    return value


def _port(option: int | None, variable: str) -> int:
    if option is not None:
        if not 0 < option < 65536:
            raise InvalidInputError("--port", f"must be between 1 and 65535, got {option}")
        return option
    value = variable or str(DEFAULT_PORT)
    port = int(value) if value.strip().isdigit() else 0
    if not 0 < port < 65536:
        raise ConfigurationError(f"HINDSIGHT_MCP_PORT={value!r} is not a port number: use 1 to 65535")
    return port


__all__ = ["DEFAULT_HOST", "DEFAULT_PORT", "DEFAULT_TRANSPORT", "TRANSPORTS", "Listening", "listening"]
