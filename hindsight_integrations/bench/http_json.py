"""The JSON replies of the benchmarks' little OpenAI-compatible servers (embeddings, scripted LLM).

Both answer the way the OpenAI API does (a JSON body with its length, an ``error`` object on
failure) and both must survive a client that hung up first: an ``openai`` client that timed out
closes its connection while the server is still writing.
"""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler
from typing import Any


def send_json(handler: BaseHTTPRequestHandler, status: int, payload: dict[str, Any]) -> None:
    """Write ``payload`` as the response to ``handler``'s request; a client already gone is not an error."""
    data = json.dumps(payload).encode()
    try:
        handler.send_response(status)
        handler.send_header("content-type", "application/json")
        handler.send_header("content-length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)
    except (BrokenPipeError, ConnectionResetError):
        pass


def error_body(message: str, kind: str = "invalid_request_error") -> dict[str, Any]:
    """An OpenAI-style error body: what the ``openai`` client reads the message from."""
    return {"error": {"message": message, "type": kind}}


__all__ = ["error_body", "send_json"]
