"""The plain reads of a Chroma server sent over one urllib3 keep-alive pool, not chromadb's client.

Through a server every recall of a small namespace makes two reads beside the question's
embedding (``NamespaceStore.currency_checks``: a count, the records newer than the watermark),
and a large namespace's recall makes its vector searches and its finalists' fetch the same way.
chromadb's ``HttpClient`` sends each request through httpx, which spends ~0.5 ms of Python on one
(URL parsing, h11's state machine): 1.3 ms for a count on loopback, of which the server's answer
is a fraction. The same request over urllib3 takes 0.8 ms and a third of the CPU, and the CPU is
what the two reads take from the embedding running beside them on a small machine.

Only reads whose answer is plain JSON go this way: ``count``, ``get`` without vectors, and
``query`` for distances alone; the body and the answer are the ones chromadb's client sends and
reads (Chroma's REST API, ``/api/v2``), and metadata goes through chromadb's own
``deserialize_metadata``. Anything else, any answer other than 200, and any failure to reach the
server returns None, and the caller asks chromadb's client instead: an error (a bad filter, a
collection gone, a transient read error that ``read_retrying`` retries) is chromadb's own,
raised as before. A server the wire could not connect to is left to chromadb's client for
``UNREACHABLE_SECONDS``: a host that drops packets would otherwise cost the wire's connect
timeout before every read chromadb's client then makes (a connection dropped once made, as an
idle keep-alive one may be, leaves only that read to chromadb's client).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

import numpy as np
import orjson
import urllib3

log = logging.getLogger(__name__)
# One pool of keep-alive connections per server, shared by every collection on it. Eight for
# recall's workers and a server's request threads; more at once open a connection each and close
# it after. No read timeout, as chromadb's client has none; an unreachable server fails at connect.
_POOLS = urllib3.PoolManager(maxsize=8, block=False, retries=False, timeout=urllib3.Timeout(connect=10.0))
UNREACHABLE_SECONDS = 30.0
"""How long a server the wire could not connect to is left to chromadb's client alone."""
_unreachable_until: dict[str, float] = {}  # by API URL: until when the wire leaves that server alone
_now = time.monotonic
_PLAIN = frozenset({"metadatas", "documents"})  # what a ``get`` may include and still go this way
_GET_ARGUMENTS = frozenset({"ids", "where", "limit", "offset", "include"})
_QUERY_ARGUMENTS = frozenset({"query_embeddings", "n_results", "where", "include"})


class ChromaWire:
    """Chroma's REST reads for one server, over the process's pool of keep-alive connections to it."""

    def __init__(self, api_url: str, headers: Mapping[str, str]) -> None:
        self._api_url = api_url.rstrip("/")
        self._headers = {k: v for k, v in headers.items() if k.lower() not in {"host", "content-length"}}
        self._headers["Content-Type"] = "application/json"

    @classmethod
    def of(cls, collection: Any) -> ChromaWire | None:
        """The wire to the plain-HTTP server ``collection`` lives on; None embedded (no HTTP to save) or over TLS.

        TLS is left to chromadb's client, whose certificate settings (``chroma_server_ssl_verify``)
        the wire would otherwise have to repeat.
        """
        server = getattr(collection, "_client", None)
        url = getattr(server, "get_api_url", lambda: "")()
        headers: Mapping[str, str] = getattr(server, "get_request_headers", dict)()
        if not isinstance(url, str) or not url.startswith("http://"):
            return None
        return cls(url, dict(headers))

    def count(self, collection: Any) -> int | None:
        """The collection's record count, as ``Collection.count``; None: ask chromadb."""
        found = self._send(collection, "GET", "count?read_level=index_and_wal", None)
        return found if isinstance(found, int) else None

    def get(self, collection: Any, **asked: Any) -> dict[str, Any] | None:
        """``Collection.get(**asked)`` without vectors; None for what only chromadb's client answers."""
        include = list(asked.get("include", ("metadatas", "documents")))
        ids = asked.get("ids")
        if (
            not set(asked) <= _GET_ARGUMENTS
            or not set(include) <= _PLAIN
            or (ids is not None and (not isinstance(ids, list) or not ids or len(set(ids)) != len(ids)))
        ):
            return None  # vectors, or what chromadb reads or refuses before sending (one id, none, one twice)
        body = {"ids": ids, "where": None, "limit": None, "offset": None} | asked
        found = self._send(collection, "POST", "get", body | {"where_document": None, "include": include})
        if not isinstance(found, dict) or "ids" not in found:
            return None
        return {
            "ids": found["ids"],
            "embeddings": None,
            "metadatas": _metadatas(found.get("metadatas")),
            "documents": found.get("documents"),
            "uris": None,
            "data": None,
            "included": include,
        }

    def query(self, collection: Any, **asked: Any) -> dict[str, Any] | None:
        """``Collection.query(**asked)`` for the ids and distances of a float32 matrix; None for the rest."""
        vectors = asked.get("query_embeddings")
        if (
            not set(asked) <= _QUERY_ARGUMENTS
            or list(asked.get("include", ())) != ["distances"]
            or not (isinstance(vectors, np.ndarray) and vectors.ndim == 2 and vectors.dtype == np.float32)
        ):
            return None
        body = {"ids": None, "n_results": 10, "where": None, "where_document": None} | asked
        found = self._send(collection, "POST", "query", body)
        if not isinstance(found, dict) or "ids" not in found or "distances" not in found:
            return None
        return {"ids": found["ids"], "distances": found["distances"]}

    def _send(self, collection: Any, method: str, action: str, body: dict[str, Any] | None) -> Any:
        """Chroma's JSON answer to ``action`` on ``collection``; None when it did not answer 200."""
        if _now() < _unreachable_until.get(self._api_url, 0.0):
            return None
        path = quote(f"/tenants/{collection.tenant}/databases/{collection.database}/collections/{collection.id}/")
        payload = None if body is None else orjson.dumps(body, option=orjson.OPT_SERIALIZE_NUMPY)
        try:
            response = _POOLS.request(method, self._api_url + path + action, body=payload, headers=self._headers)
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            if isinstance(exc, urllib3.exceptions.ConnectTimeoutError):  # no connection made (refused, timed out)
                _unreachable_until[self._api_url] = _now() + UNREACHABLE_SECONDS
            log.debug("Chroma %s over the wire failed (%s); asking chromadb's client", action, exc)
            return None
        if response.status != 200:
            return None  # chromadb's client sends it again and raises its own error
        try:
            return orjson.loads(response.data)
        except orjson.JSONDecodeError:
            return None


def _metadatas(metadatas: list[Any] | None) -> list[Any] | None:
    """Chroma's transport form of metadata read as chromadb's client reads it."""
    if metadatas is None:
        return None
    from chromadb.api.types import deserialize_metadata

    return [deserialize_metadata(m) if m is not None else None for m in metadatas]


__all__ = ["UNREACHABLE_SECONDS", "ChromaWire"]
