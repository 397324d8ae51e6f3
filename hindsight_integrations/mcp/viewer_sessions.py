"""Signed-in browsers and forged posts: the viewer's session cookies, CSRF tokens and Origin check.

A person signs in with the same bearer token an agent uses; the token is posted once, checked
like the tools' ``Authorization`` header, and exchanged for a signed session cookie
(``ViewerSessions``: HttpOnly, SameSite=Strict; the token itself never appears in a URL or a
cookie). Tokens are derived, not stored, so stateless replicas with the same token map accept
each other's; signing out revokes the session for every replica sharing the store
(``core.storage.revocations``).

A page elsewhere must not act in the signed-in person's name. ``SameSite=Strict`` does not stop
another port of the same host or a sibling subdomain (they are the same *site*), so every POST
is checked twice: by ``cross_origin`` (what the browser says of where it came from) and by its
CSRF token (``ViewerSessions.csrf_token``: the HMAC of the session cookie, or before sign-in
and without tokens, of a signed pre-session cookie, ``PRE_COOKIE``).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time
from collections.abc import Mapping
from datetime import timedelta
from urllib.parse import urlsplit

from starlette.requests import Request

from ..core.storage.revocations import RevokedSessions

COOKIE = "hindsight_ui"
PRE_COOKIE = "hindsight_ui_pre"
"""Before sign-in (and on a server without tokens): what the forms' CSRF tokens are bound to."""
SESSION_LIFETIME = timedelta(hours=12)  # a sign-in lasts this long
_SAME_ORIGIN = frozenset({"same-origin", "none"})  # Sec-Fetch-Site values of a page's own posts (none: the user's)


class ViewerSessions:
    """Signed-in browsers as signed cookies, so every replica with the same token map accepts them.

    A cookie is ``<token fingerprint>.<expiry>.<nonce>.<signature>``: the fingerprint and the
    signature are HMACs under a key derived from the whole token map, which only the servers
    know. Nothing is kept per session, so two stateless replicas behind a load balancer (see
    docker-compose.yml) both honour a sign-in; the namespace is looked up again on every
    request, and any change to the token map changes the key and so ends every session. Signing
    out records the session in ``revoked``, which every replica sharing the store consults.

    The same key signs pre-session cookies (``new_pre_session``) and derives the CSRF token of
    a cookie (``csrf_token``). Without tokens there is nothing to derive a shared key from, and
    nobody signs in: a random key of this process signs what it hands out.
    """

    def __init__(
        self, token_map: Mapping[str, str] | None, *, revoked: RevokedSessions, lifetime: timedelta = SESSION_LIFETIME
    ) -> None:
        tokens = dict(token_map or {})
        self.lifetime = lifetime
        self._key = (
            hashlib.sha256(b"hindsight-ui\0" + b"\0".join(sorted(t.encode() for t in tokens))).digest()
            if tokens
            else secrets.token_bytes(32)
        )
        self._tokens = [(t.encode(), self._fingerprint(t)) for t in tokens]
        self._by_fingerprint = {self._fingerprint(t): ns for t, ns in tokens.items()}
        self._revoked = revoked

    def _mac(self, label: bytes, payload: str) -> str:
        return hmac.new(self._key, label + b"\0" + payload.encode(), hashlib.sha256).hexdigest()

    def _fingerprint(self, token: str) -> str:
        return self._mac(b"token", token)[:24]

    def _sign(self, payload: str) -> str:
        return self._mac(b"cookie", payload)

    def sign_in(self, presented: str) -> str | None:
        """A new session cookie for a valid token (compared in constant time against every token), else None."""
        found = None
        for token, fingerprint in self._tokens:
            if hmac.compare_digest(token, presented.strip().encode()):
                found = fingerprint
        if found is None:
            return None
        expires = int(time.time() + self.lifetime.total_seconds())
        payload = f"{found}.{expires}.{secrets.token_urlsafe(12)}"
        return f"{payload}.{self._sign(payload)}"

    def _verified(self, cookie: str | None) -> tuple[str, int] | None:
        """(fingerprint, expiry) of a cookie this key signed that has not expired; None otherwise."""
        if not cookie:
            return None
        payload, _, signature = cookie.rpartition(".")
        if not hmac.compare_digest(signature.encode(), self._sign(payload).encode()):
            return None
        fingerprint, _, rest = payload.partition(".")
        expires = rest.partition(".")[0]
        if not expires.isdigit() or int(expires) < time.time():
            return None
        return fingerprint, int(expires)

    def session_id(self, cookie: str) -> str:
        """The id a signed-out session is recorded under (a digest: the store never holds a usable cookie)."""
        return self._mac(b"session", cookie)[:32]

    def namespace(self, cookie: str | None) -> str | None:
        """The namespace of a valid, unexpired, not signed-out cookie, or None (may raise StoreUnavailableError)."""
        verified = self._verified(cookie)
        if verified is None or cookie is None:
            return None
        namespace = self._by_fingerprint.get(verified[0])
        if namespace is None or self._revoked.is_revoked(self.session_id(cookie)):
            return None
        return namespace

    def signed_namespace(self, cookie: str | None) -> str | None:
        """The namespace an unexpired cookie this key signed was issued to, signed out or not (no store read).

        Enough to count a viewer request against its namespace's bounds before the page runs
        (``NamespaceQuota``): only that namespace's token could have made the cookie.
        """
        verified = self._verified(cookie)
        return self._by_fingerprint.get(verified[0]) if verified is not None else None

    def sign_out(self, cookie: str | None) -> None:
        """Refuse ``cookie`` from now on, on every replica sharing the store (may raise StoreUnavailableError)."""
        verified = self._verified(cookie)
        if verified is not None and cookie is not None:
            self._revoked.revoke(self.session_id(cookie), expires_at=verified[1])

    def new_pre_session(self) -> str:
        """A signed pre-session cookie value: ``<expiry>.<nonce>.<signature>``."""
        payload = f"{int(time.time() + self.lifetime.total_seconds())}.{secrets.token_urlsafe(16)}"
        return f"{payload}.{self._mac(b'pre-session', payload)}"

    def valid_pre_session(self, value: str | None) -> bool:
        """Whether ``value`` is a pre-session cookie this key signed that has not expired."""
        if not value:
            return False
        payload, _, signature = value.rpartition(".")
        expires = payload.partition(".")[0]
        return (
            hmac.compare_digest(signature.encode(), self._mac(b"pre-session", payload).encode())
            and expires.isdigit()
            and int(expires) >= time.time()
        )

    def csrf_token(self, binding: str) -> str:
        """The CSRF token of forms served to the browser holding cookie ``binding``."""
        return self._mac(b"csrf", binding)[:40]

    def csrf_ok(self, binding: str, presented: object) -> bool:
        """Whether a posted CSRF field is ``binding``'s token (constant-time)."""
        return isinstance(presented, str) and hmac.compare_digest(presented.encode(), self.csrf_token(binding).encode())


def cross_origin(request: Request) -> str | None:
    """Why a POST did not come from one of this server's own pages, as far as the browser says; None if it did.

    Browsers send ``Sec-Fetch-Site`` (``same-origin`` for a page's own forms) and ``Origin``
    with every form post; a client that sends neither is left to the CSRF token.
    """
    site = (request.headers.get("sec-fetch-site") or "").lower()
    if site and site not in _SAME_ORIGIN:
        where = "another origin of this site" if site == "same-site" else "another site"
        return f"this request came from a page of {where} (Sec-Fetch-Site: {site[:30]}), not from this viewer"
    origin = request.headers.get("origin")
    if origin is not None:
        host = request.headers.get("host") or ""
        netloc = urlsplit(origin).netloc if origin != "null" else ""
        if not netloc or netloc.lower() != host.lower():
            return f"this request came from a page of {origin[:100]!r}, not from this viewer ({host[:100]})"
    return None


__all__ = ["COOKIE", "PRE_COOKIE", "SESSION_LIFETIME", "ViewerSessions", "cross_origin"]
