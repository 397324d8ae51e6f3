"""Bearer-token → namespace mapping for the HTTP transport.

In HTTP mode one server is shared by many users, so the namespace must come from who is
calling, never from an argument the caller controls. ``BearerNamespaceMiddleware`` maps the
``Authorization: Bearer <token>`` header to a namespace, answers 401 when the token is
missing or unknown, and records the namespace both in a contextvar and in the ASGI scope.
The scope copy matters: the MCP SDK runs tool handlers in the session's task, not the
request's, so the server reads the namespace back from the request the message arrived on
(``request_context.request``) and re-binds ``current_namespace`` around each tool call.

Tokens are secrets that replace a password, so the server refuses to start with one that could
be guessed: ``validate_token_map`` wants at least ``MIN_TOKEN_CHARS`` characters, of at least
``MIN_DISTINCT_CHARS`` different ones (``hindsight token`` prints a good one). Failed
authentications are counted per client address and throttled (``throttle.AuthFailures``).
"""

from __future__ import annotations

import hmac
import json
import os
from collections.abc import Mapping
from contextvars import ContextVar
from pathlib import Path

from starlette.types import ASGIApp, Receive, Scope, Send

from ..core.config import validate_namespace
from ..core.errors import ConfigurationError, InvalidInputError
from .throttle import AuthFailures, client_address, retry_after_header, security_event

current_namespace: ContextVar[str | None] = ContextVar("hindsight_namespace", default=None)
"""The namespace of the tool call being served (set by the server around every call)."""

SCOPE_KEY = "hindsight_namespace"
# Load-balancer probes carry no token and learn nothing but "up". /metrics is not public: its
# counts describe every tenant's use, so a scraper sends one of the tokens (Prometheus:
# ``authorization: {credentials: ...}``).
PUBLIC_PATHS = frozenset({"/health"})
VIEWER_PREFIX = "/ui"  # the viewer signs browsers in itself (token form → session cookie, ``viewer.py``)
MIN_TOKEN_CHARS = 32
MIN_DISTINCT_CHARS = 10
GENERATE_TOKEN = '`hindsight token` or `python -c "import secrets; print(secrets.token_urlsafe(32))"`'


def parse_token_env(value: str) -> dict[str, str]:
    """``"tok1=ns1,tok2=ns2"`` → ``{"tok1": "ns1", "tok2": "ns2"}``."""
    tokens: dict[str, str] = {}
    for pair in filter(None, (p.strip() for p in value.split(","))):
        token, sep, namespace = pair.partition("=")
        if not sep or not token.strip() or not namespace.strip():
            raise ConfigurationError(f"HINDSIGHT_TOKENS entry {pair!r} is not token=namespace")
        tokens[token.strip()] = namespace.strip()
    return tokens


def load_token_map(
    tokens_file: str | Path | None = None, *, environ: Mapping[str, str] | None = None
) -> dict[str, str] | None:
    """Tokens from ``tokens_file`` / HINDSIGHT_TOKENS_FILE (JSON ``{"tokens": {...}}``) and HINDSIGHT_TOKENS.

    Returns None when no auth is configured (the server then serves one namespace to all).
    """
    env = os.environ if environ is None else environ
    path = tokens_file or env.get("HINDSIGHT_TOKENS_FILE")
    tokens: dict[str, str] = {}
    if path:
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except OSError as exc:
            raise ConfigurationError(
                f"cannot read tokens file {path}: {exc.strerror or exc} (--tokens-file or HINDSIGHT_TOKENS_FILE)"
            ) from None
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ConfigurationError(f"tokens file {path} is not valid JSON: {exc}") from None
        mapping = data.get("tokens") if isinstance(data, dict) else None
        if not isinstance(mapping, dict):
            raise ConfigurationError(f'tokens file {path} must be JSON like {{"tokens": {{"<token>": "<namespace>"}}}}')
        tokens.update({str(k): str(v) for k, v in mapping.items()})
    if env.get("HINDSIGHT_TOKENS"):
        tokens.update(parse_token_env(env["HINDSIGHT_TOKENS"]))
    if not tokens and not path:
        return None
    return validate_token_map(tokens)


def token_weakness(token: str) -> str | None:
    """Why ``token`` could be guessed (too short, too few different characters), or None when it is strong enough."""
    if len(token) < MIN_TOKEN_CHARS:
        return f"is {len(token)} characters; tokens need at least {MIN_TOKEN_CHARS}"
    if len(set(token)) < MIN_DISTINCT_CHARS:
        return f"uses {len(set(token))} different characters; tokens need at least {MIN_DISTINCT_CHARS}"
    if token != token.strip() or any(c.isspace() for c in token):
        return "holds whitespace, which a header or form would not carry intact"
    return None


def validate_token_map(tokens: Mapping[str, str]) -> dict[str, str]:
    """The token map with every namespace checked and every weak token refused (it could be guessed).

    The error names the token by its namespace and position, never by its text: start-up
    errors end up in logs.
    """
    if not tokens:
        raise ConfigurationError("token map is empty: give at least one token, or no token map to disable auth")
    out = {}
    for position, (token, namespace) in enumerate(tokens.items(), start=1):
        weakness = token_weakness(token)
        if weakness is not None:
            raise ConfigurationError(
                f"bearer token #{position} (for namespace {namespace!r}) {weakness}: generate one with {GENERATE_TOKEN}"
            )
        try:
            out[token] = validate_namespace(namespace)
        except InvalidInputError as exc:
            raise ConfigurationError(f"token map: {exc}") from None
    return out


class BearerNamespaceMiddleware:
    """ASGI middleware: authenticate every HTTP request and bind its namespace.

    Not ``/health`` (public: up or not) nor the viewer under ``/ui``, which checks the same
    tokens through its sign-in form and answers with a sign-in page, not a 401. A client whose
    recent failures reached the limit (``failures``) gets 429 before its token is looked at;
    each failure and each refusal is logged as a security event. A request without any
    ``Authorization`` header gets its 401 but is no failure: it guessed nothing.
    """

    def __init__(self, app: ASGIApp, token_map: Mapping[str, str], failures: AuthFailures) -> None:
        self.app = app
        self._tokens = [(t.encode(), ns) for t, ns in token_map.items()]
        self._failures = failures

    def _lookup(self, presented: bytes) -> str | None:
        found = None
        for token, namespace in self._tokens:  # constant-time compare against every token
            if hmac.compare_digest(token, presented):
                found = namespace
        return found

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass public paths through; otherwise answer 401 or serve the request bound to the token's namespace."""
        path = scope.get("path") or ""
        viewer = path == VIEWER_PREFIX or path.startswith(VIEWER_PREFIX + "/")
        if scope["type"] != "http" or path in PUBLIC_PATHS or viewer:
            await self.app(scope, receive, send)
            return
        client = client_address(scope)
        wait = self._failures.retry_after(client)
        if wait > 0:
            count = self._failures.failures(client)
            security_event(
                "auth_throttled",
                client=client,
                path=path,
                reason="too many failed authentications",
                count=count,
                retry_after=retry_after_header(wait),
            )
            await _throttled(send, wait)
            return
        header = dict(scope.get("headers") or []).get(b"authorization", b"")
        scheme, _, presented = header.partition(b" ")
        namespace = self._lookup(presented.strip()) if scheme.lower() == b"bearer" and presented.strip() else None
        if namespace is None:
            if not header:  # no credential, no guess: a browser's /favicon.ico, a scraper not yet configured
                await _unauthorized(send, "missing bearer token")
                return
            reason = "invalid bearer token" if scheme.lower() == b"bearer" else "not a bearer token"
            count = self._failures.record(client)
            security_event("auth_failure", client=client, path=path, reason=reason, count=count)
            await _unauthorized(send, reason)
            return
        scope.setdefault("state", {})[SCOPE_KEY] = namespace
        token = current_namespace.set(namespace)
        try:
            await self.app(scope, receive, send)
        finally:
            current_namespace.reset(token)


async def _throttled(send: Send, wait: float) -> None:
    seconds = retry_after_header(wait)
    body = json.dumps(
        {
            "error": "too_many_failed_authentications",
            "message": f"too many failed authentications from this address; retry in {seconds} s",
            "retry_after": int(seconds),
        }
    ).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 429,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"retry-after", seconds.encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


async def _unauthorized(send: Send, reason: str) -> None:
    body = json.dumps({"error": "unauthorized", "message": f"{reason}: send 'Authorization: Bearer <token>'"}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 401,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"www-authenticate", b'Bearer realm="hindsight"'),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
