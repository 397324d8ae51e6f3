"""Per-call logging, Prometheus metrics and per-namespace rate limits for the MCP server.

Every tool call produces one JSON log line on logger ``hindsight.mcp`` (tool, namespace,
argument summary, latency, outcome). Arguments are summarised, not logged verbatim: memory
content is user data, and a 32 KB memory would drown the log. Metrics live in a registry
per server so several servers in one process (tests, benchmarks) do not collide.
"""

from __future__ import annotations

import json
import logging
import sys
import threading
import time
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram

log = logging.getLogger("hindsight.mcp")

_LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


class JsonFormatter(logging.Formatter):
    """One JSON object per line; fields passed as ``extra={"fields": {...}}`` are merged in."""

    def format(self, record: logging.LogRecord) -> str:
        """The record as one JSON line, so log pipelines can filter on tool, namespace and outcome."""
        data: dict[str, Any] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "event": record.getMessage(),
        }
        data.update(getattr(record, "fields", {}) or {})
        if record.exc_info:
            data["exception"] = self.formatException(record.exc_info)
        return json.dumps(data, ensure_ascii=False, default=str)


def configure_logging(level: str = "INFO") -> None:
    """Send ``hindsight.*`` logs to stderr as JSON (stdout is the protocol stream in stdio mode)."""
    root = logging.getLogger("hindsight")
    if not any(getattr(h, "_hindsight_json", False) for h in root.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(JsonFormatter())
        handler._hindsight_json = True  # type: ignore[attr-defined]
        root.addHandler(handler)
    root.setLevel(level.upper())
    root.propagate = False


def quote_briefly(text: str, limit: int = 60) -> str:
    """``text`` cut to ``limit`` characters with its length: logs never quote a caller's megabytes."""
    return text if len(text) <= limit else f"{text[: limit - 3]}... ({len(text)} chars)"


def summarize_arguments(arguments: dict[str, Any]) -> dict[str, Any]:
    """A loggable view: strings cut to 60 chars with their length, lists and objects as their size."""
    out: dict[str, Any] = {}
    for key, value in list(arguments.items())[:20]:
        key = quote_briefly(str(key), 40)
        if isinstance(value, str):
            out[key] = quote_briefly(value)
        elif isinstance(value, list):
            out[key] = f"[{len(value)} items]"
        elif isinstance(value, dict):
            shown = json.dumps(value, ensure_ascii=False, default=str) if key == "filters" else ""
            out[key] = value if key == "filters" and len(shown) <= 300 else f"{{{len(value)} keys}}"
        else:
            out[key] = value
    if len(arguments) > 20:
        out["..."] = f"{len(arguments) - 20} more arguments"
    return out


class ServerMetrics:
    """Prometheus series for one server: calls and latency by tool and outcome, recall health."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.calls = Counter("hindsight_mcp_tool_calls", "MCP tool calls", ["tool", "outcome"], registry=self.registry)
        self.latency = Histogram(
            "hindsight_mcp_tool_latency_seconds",
            "MCP tool call latency",
            ["tool", "outcome"],
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.recall_latency = Histogram(
            "hindsight_recall_latency_seconds",
            "Engine recall latency (retrieve_memory)",
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.recall_requests = Counter(
            "hindsight_recall_requests", "retrieve_memory calls that succeeded", registry=self.registry
        )
        self.recall_hits = Counter(
            "hindsight_recall_with_hits",
            "retrieve_memory calls that returned at least one memory",
            registry=self.registry,
        )
        self.memories_written = Counter(
            "hindsight_memories_written", "memories stored or merged", registry=self.registry
        )
        self.memories_superseded = Counter(
            "hindsight_memories_superseded",
            "older memories superseded by a conflicting new one",
            registry=self.registry,
        )
        self.rate_limited = Counter(
            "hindsight_mcp_rate_limited", "tool calls refused by the per-namespace rate limit", registry=self.registry
        )

    def observe_call(self, tool: str, outcome: str, seconds: float) -> None:
        """Count one tool call and record its latency, by tool and outcome."""
        self.calls.labels(tool, outcome).inc()
        self.latency.labels(tool, outcome).observe(seconds)


class RateLimiter:
    """A token bucket per namespace: ``per_minute`` calls, bursting up to ``burst``.

    One tenant hammering a shared server must not starve the others; a refused call is a
    readable tool error that says when to retry, not a dropped connection.
    """

    def __init__(self, per_minute: float, burst: int | None = None) -> None:
        if per_minute <= 0:
            raise ValueError("per_minute must be positive")
        self.rate = per_minute / 60.0
        self.capacity = float(burst or max(1, int(per_minute)))
        self._buckets: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def acquire(self, namespace: str) -> float:
        """Take one token; returns 0 on success, else the seconds until one is available."""
        now = time.monotonic()
        with self._lock:
            tokens, stamp = self._buckets.get(namespace, (self.capacity, now))
            tokens = min(self.capacity, tokens + (now - stamp) * self.rate)
            if tokens >= 1:
                self._buckets[namespace] = (tokens - 1, now)
                return 0.0
            self._buckets[namespace] = (tokens, now)
            return (1 - tokens) / self.rate
