"""Which ``Host`` headers the HTTP server answers: the defence against DNS rebinding.

A page on ``attacker.example`` can make its name resolve to 127.0.0.1 after it has loaded; the
browser then treats the local server as that page's own origin and lets the page read its
answers. The page cannot change the ``Host`` header the browser sends (``attacker.example``),
so a server that only answers its own names is safe. The MCP SDK does this for ``/mcp``
(``TransportSecuritySettings``); ``HostGuard`` does it for every route (``/ui``, ``/debug/*``,
``/health``, ``/metrics`` and ``/mcp`` alike) with the same list, answering 421.

The list: the loopback names on any port, the address the server is bound to, and
``HINDSIGHT_ALLOWED_HOSTS`` (a public name behind a reverse proxy). It is enforced

- on a server without tokens (``hindsight ui``, ``hindsight serve --transport http`` without a
  token map), wherever it is bound: nothing else stands between a page and the memories;
- on a server bound to loopback (as the SDK has always done for ``/mcp``);
- on any server once ``HINDSIGHT_ALLOWED_HOSTS`` is set.

A server with tokens bound to a public address and no list keeps answering any ``Host`` (behind
a load balancer the ``Host`` header is whatever name it was reached by): there every route needs
a bearer token or a viewer session, and the viewer refuses cross-origin posts (``viewer.py``).
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Sequence

from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import ASGIApp, Receive, Scope, Send

from .throttle import client_address, security_event

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")
"""Names a browser uses for this machine; a rebinding page always sends its own name instead."""
WILDCARD_ADDRESSES = frozenset({"", "0.0.0.0", "::", "[::]"})
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_HOST_NAME = re.compile(rf"{_LABEL}(?:\.{_LABEL})*")


def bind_address_problem(host: str) -> str | None:
    """Why ``host`` is no address to listen on, or None when it is one.

    uvicorn only finds out when it binds, after the model has loaded and the store was opened,
    and says ``Name or service not known`` without naming the option or variable to fix.
    """
    try:
        ipaddress.ip_address(host)
        return None
    except ValueError:
        pass
    if _HOST_NAME.fullmatch(host) and not host.rpartition(".")[2].isdigit():  # "256.1.1.1" is no name either
        return None
    return (
        "is not an address to listen on: use an IP address (127.0.0.1, 0.0.0.0 for every interface, ::1, ::) "
        "or a host name, without a scheme, a port (that is the port setting) or brackets"
    )


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a bind address) only accepts connections from this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _as_host_header(address: str) -> str:
    """A bind address as it appears in a Host header (IPv6 in brackets), lower-case."""
    address = address.lower()
    try:
        if ipaddress.ip_address(address.strip("[]")).version == 6:
            return f"[{address.strip('[]')}]"
    except ValueError:
        pass
    return address


def allowed_hosts(configured: Sequence[str], *, bind_host: str, auth: bool) -> list[str] | None:
    """The Host entries the server answers (``name``, ``name:port``, ``name:*``), or None: any Host.

    None only for a server with tokens, bound to a public address, with nothing configured.
    """
    if not configured and auth and not is_loopback(bind_host):
        return None
    hosts = [f"{name}:*" for name in LOOPBACK_HOSTS]
    if bind_host.lower() not in WILDCARD_ADDRESSES and not is_loopback(bind_host):
        hosts.append(f"{_as_host_header(bind_host)}:*")
    hosts += [entry if _has_port(entry) else f"{entry}:*" for entry in configured]
    return list(dict.fromkeys(hosts))


def _has_port(entry: str) -> bool:
    """Whether a host entry names a port (``name:443``, ``name:*``, ``[::1]:80``); a bare name means any port."""
    if entry.startswith("["):
        return entry.partition("]")[2].startswith(":")
    return ":" in entry


def host_matches(host: str, allowed: Sequence[str]) -> bool:
    """Whether a Host header value is one of ``allowed`` (``name:*`` also matches the bare name)."""
    host = host.strip().lower()
    if not host:
        return False
    for entry in allowed:
        if entry.endswith(":*"):
            name = entry[:-2]
            if host == name or (host.startswith(name + ":") and host[len(name) + 1 :].isdigit()):
                return True
        elif host == entry:
            return True
    return False


def transport_security(allowed: list[str] | None) -> TransportSecuritySettings:
    """The MCP SDK's ``/mcp`` settings for the same list: the hosts, and the origins of pages served by them."""
    if allowed is None:
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    origins = [f"{scheme}://{entry}" for entry in allowed for scheme in ("http", "https")]
    hosts = allowed + [entry[:-2] for entry in allowed if entry.endswith(":*")]
    origins += [f"{scheme}://{entry[:-2]}" for entry in allowed if entry.endswith(":*") for scheme in ("http", "https")]
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins)


class HostGuard:
    """ASGI middleware: refuse (421) every HTTP request whose Host header is not in ``allowed``."""

    def __init__(self, app: ASGIApp, allowed: Sequence[str]) -> None:
        self.app = app
        self.allowed = list(allowed)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve requests for an allowed Host; answer any other with 421 and a line saying what to set."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        host = dict(scope.get("headers") or []).get(b"host", b"").decode("latin-1")
        if host_matches(host, self.allowed):
            await self.app(scope, receive, send)
            return
        security_event(
            "host_refused",
            client=client_address(scope),
            path=scope.get("path") or "",
            reason="foreign Host header",
            host=host[:100],
        )
        body = json.dumps(
            {
                "error": "misdirected_request",
                "message": f"this server does not answer for Host {host[:100]!r}; it answers "
                f"{', '.join(self.allowed)} (add a name with HINDSIGHT_ALLOWED_HOSTS)",
            }
        ).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 421,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
            }
        )
        await send({"type": "http.response.body", "body": body})


__all__ = [
    "LOOPBACK_HOSTS",
    "HostGuard",
    "allowed_hosts",
    "bind_address_problem",
    "host_matches",
    "is_loopback",
    "transport_security",
]
