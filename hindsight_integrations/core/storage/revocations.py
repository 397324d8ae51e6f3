"""Signed-out viewer sessions, kept in the store so that every replica refuses them.

The viewer's sessions are signed cookies (``mcp/viewer.py``): any replica with the same token
map accepts one without asking anyone, which is what lets stateless replicas share a sign-in.
So a sign-out has to be written where every replica looks: one small record per signed-out
session in a Chroma collection of its own (``REVOKED_COLLECTION``, never listed as a namespace,
like the upkeep lease's), keyed by a digest of the cookie, kept until the cookie would have
expired anyway and then deleted.

Each replica remembers what it learnt for ``cache_seconds``: a session found signed out stays
refused; one found live is asked about again once that time has passed. A sign-out on one
replica is therefore refused by every other within ``cache_seconds`` (0: on the next request).
Only cookies whose signature checks out are ever looked up, so a stranger cannot make a
replica read the store (or fill this cache) with made-up sessions.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from ..errors import StoreUnavailableError

REVOKED_COLLECTION = "hindsightrevoked_sessions"
"""The collection: it does not start with ``store.COLLECTION_PREFIX``, so it is never a namespace."""
_CACHE_ENTRIES = 4096  # live sessions remembered per replica; beyond that the least recently seen is asked again


class RevokedSessions:
    """The signed-out sessions of the store that ``client`` opens, with a short per-replica cache.

    ``client`` gives the Chroma client (``lambda: engine.chroma.client``), asked for on the first
    sign-out or check, so a server is built without touching the store; ``clock`` gives Unix
    time, so tests can expire records without waiting.
    """

    def __init__(
        self, client: Callable[[], Any], *, cache_seconds: float, clock: Callable[[], float] = time.time
    ) -> None:
        self._client = client
        self.cache_seconds = cache_seconds
        self._clock = clock
        self._collection: Any = None
        self._lock = threading.Lock()
        self._revoked: dict[str, float] = {}  # session id -> when its cookie expires
        self._live: OrderedDict[str, float] = OrderedDict()  # session id -> when it was found live

    def revoke(self, session_id: str, *, expires_at: float) -> None:
        """Record ``session_id`` as signed out until ``expires_at`` (Unix time); raises StoreUnavailableError."""
        now = self._clock()
        try:
            collection = self._records()
            # Chroma keeps every record with a vector; these are constants nobody searches.
            collection.upsert(ids=[session_id], embeddings=[[1.0]], metadatas=[{"expires_at": int(expires_at) + 1}])
            collection.delete(where={"expires_at": {"$lt": int(now)}})
        except StoreUnavailableError:
            raise
        except Exception as exc:
            raise StoreUnavailableError(f"could not record the sign-out ({REVOKED_COLLECTION}): {exc}") from exc
        with self._lock:
            self._revoked = {sid: until for sid, until in self._revoked.items() if until > now}
            self._revoked[session_id] = expires_at
            self._live.pop(session_id, None)

    def is_revoked(self, session_id: str) -> bool:
        """Whether ``session_id`` was signed out (on any replica); raises StoreUnavailableError."""
        now = self._clock()
        with self._lock:
            if session_id in self._revoked:
                return True
            checked = self._live.get(session_id)
            if checked is not None and now - checked < self.cache_seconds:
                self._live.move_to_end(session_id)
                return False
        try:
            got = self._records().get(ids=[session_id], include=["metadatas"])
        except StoreUnavailableError:
            raise
        except Exception as exc:
            raise StoreUnavailableError(
                f"could not read the signed-out sessions ({REVOKED_COLLECTION}): {exc}"
            ) from exc
        with self._lock:
            if got.get("ids"):
                meta = (got.get("metadatas") or [{}])[0] or {}
                self._revoked = {sid: until for sid, until in self._revoked.items() if until > now}
                self._revoked[session_id] = float(meta.get("expires_at") or now + 1)
                self._live.pop(session_id, None)
                return True
            self._live[session_id] = now
            self._live.move_to_end(session_id)
            while len(self._live) > _CACHE_ENTRIES:
                self._live.popitem(last=False)
        return False

    def _records(self) -> Any:
        if self._collection is None:
            try:
                self._collection = self._client().get_or_create_collection(
                    REVOKED_COLLECTION, embedding_function=None, metadata={"hindsight": "signed-out viewer sessions"}
                )
            except Exception as exc:
                raise StoreUnavailableError(f"could not open {REVOKED_COLLECTION}: {exc}") from exc
        return self._collection


__all__ = ["REVOKED_COLLECTION", "RevokedSessions"]
