"""An OpenAI-compatible ``/v1/embeddings`` endpoint on 127.0.0.1 in front of a local embedder.

``hindsight bench peers`` runs mem0 in a virtual environment of its own (see
``mem0_peer``); mem0's ``openai`` embedder pointed at this endpoint embeds with the same
MiniLM instance as every other peer, and nothing is downloaded. The server takes a random
bearer key, so another process on the machine cannot use it, and it answers the request
shape the ``openai`` client sends: ``input`` as a string or a list of strings,
``encoding_format`` ``float`` or ``base64`` (little-endian float32, as the API encodes it),
``model`` and ``dimensions`` only when they name this model and its size, so a client
configured for another model fails instead of silently getting MiniLM vectors.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import numpy as np

from ..core.embedding.protocol import Embedder
from .http_json import LoopbackServer, QuietHandler, error_body, send_json


class _Refused(Exception):
    """A request the endpoint answers with an OpenAI-style error body instead of vectors."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class EmbeddingServer(LoopbackServer):
    """Serve ``embedder`` at ``base_url`` (``http://127.0.0.1:PORT/v1``) until ``close``; also a context manager."""

    def __init__(self, embedder: Embedder, *, host: str = "127.0.0.1", port: int = 0) -> None:
        self.embedder = embedder
        self.requests = 0
        self.texts = 0
        server = self

        class Handler(QuietHandler):
            def do_POST(self) -> None:
                try:
                    body = self.rfile.read(int(self.headers.get("content-length") or 0))
                    if self.path.rstrip("/") != "/v1/embeddings":
                        raise _Refused(404, f"no such endpoint: POST {self.path} (only /v1/embeddings)")
                    if not server.authorised(self):
                        raise _Refused(401, "missing or wrong API key")
                    send_json(self, 200, server.answer(body))
                except _Refused as exc:
                    send_json(self, exc.status, error_body(str(exc)))

            def do_GET(self) -> None:
                send_json(self, 404, error_body("only POST /v1/embeddings"))

        super().__init__(Handler, host=host, port=port, name="embedding-server")

    def answer(self, raw: bytes) -> dict[str, Any]:
        """The response body for one request body, as the OpenAI embeddings API shapes it."""
        try:
            body = json.loads(raw or b"{}")
        except ValueError as exc:
            raise _Refused(400, f"the body is not JSON: {exc}") from None
        if not isinstance(body, dict):
            raise _Refused(400, "the body must be a JSON object")
        texts = body.get("input")
        if isinstance(texts, str):
            texts = [texts]
        if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
            raise _Refused(400, "'input' must be a string or a non-empty list of strings (token ids are not supported)")
        model = body.get("model")
        if model not in (None, self.embedder.name):
            raise _Refused(400, f"this endpoint serves {self.embedder.name!r}, not {model!r}")
        wanted = body.get("dimensions")
        if wanted is not None and wanted != self.embedder.dimension:
            raise _Refused(400, f"this model has {self.embedder.dimension} dimensions, not {wanted}")
        encoding = body.get("encoding_format") or "float"
        if encoding not in ("float", "base64"):
            raise _Refused(400, f"encoding_format must be 'float' or 'base64', not {encoding!r}")
        vectors = self.embedder.embed(texts)
        self.requests += 1
        self.texts += len(texts)
        data = [
            {
                "object": "embedding",
                "index": i,
                "embedding": vector
                if encoding == "float"
                else base64.b64encode(np.asarray(vector, dtype="<f4").tobytes()).decode("ascii"),
            }
            for i, vector in enumerate(vectors)
        ]
        return {
            "object": "list",
            "data": data,
            "model": self.embedder.name,
            "usage": {"prompt_tokens": 0, "total_tokens": 0},
        }
