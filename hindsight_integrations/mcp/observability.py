"""Per-call logging, Prometheus metrics and per-namespace rate limits for the MCP server.

Every tool call produces one JSON log line on logger ``hindsight.mcp`` (tool, namespace,
argument summary, latency, outcome). Arguments are summarised, never logged verbatim: a
shared server's log must not hold its tenants' memories, so text is logged as its length and
a short hash, and only ids, numbers, flags and enum values appear as they are
(``summarize_arguments``; ``core/redaction.py``; ``HINDSIGHT_LOG_CONTENT=true`` quotes text
again, for debugging only). Metrics live in a registry per server so several servers in one
process (tests, benchmarks) do not collide.
"""

from __future__ import annotations

import json
import logging
import math
import re
import sys
import threading
import time
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from ..core.model.records import Kind, Role, Status, Tier
from ..core.redaction import caller_strings, content_in_logs, redact, safe_traceback, text_summary
from ..core.upkeep.runner import UPKEEP_ACTIONS, UpkeepReport

log = logging.getLogger("hindsight.mcp")

_LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
_UPKEEP_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0)
UPKEEP_TRIGGERS = ("schedule", "tool")
UPKEEP_STEPS = ("compress", "consolidate", "maintain", "open")
"""Step names a metric label may carry; any other step is counted as ``other``."""


class JsonFormatter(logging.Formatter):
    """One JSON object per line; fields passed as ``extra={"fields": {...}}`` are merged in."""

    def format(self, record: logging.LogRecord) -> str:
        """The record as one JSON line, so log pipelines can filter on tool, namespace and outcome."""
        event = record.getMessage()
        if not content_in_logs():
            # Our own lines never quote memory text on purpose (but may quote a namespace); any line
            # logged while a call is served loses that call's strings, and a library's line (the MCP
            # SDK quotes an unknown tool's name) its quoted spans as well.
            event = redact(event, quoted=not record.name.startswith(("hindsight.", "hindsight_integrations")))
        data: dict[str, Any] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "event": event,
        }
        data.update(getattr(record, "fields", {}) or {})
        if record.exc_info:
            error = record.exc_info[1]
            # A traceback's last line is the exception's message, which may quote memory text.
            if error is None or content_in_logs():
                data["exception"] = self.formatException(record.exc_info)
            else:
                data["exception"] = safe_traceback(error)
        return json.dumps(data, ensure_ascii=False, default=str)


def configure_logging(level: str = "INFO", *, sdk_level: str = "WARNING") -> None:
    """Send the package's logs to stderr as JSON (stdout is the protocol stream in stdio mode).

    ``hindsight.*`` (server, upkeep, replicas), ``hindsight_integrations.*`` (the engine's
    modules, which log under their module names) and ``mcp.*`` (the MCP SDK, at ``sdk_level``):
    every line of a server's log is JSON, and redacted the same way (``JsonFormatter``).
    """
    for name, chosen in (("hindsight", level), ("hindsight_integrations", level), ("mcp", sdk_level)):
        logger = logging.getLogger(name)
        if not any(getattr(h, "_hindsight_json", False) for h in logger.handlers):
            handler = logging.StreamHandler(sys.stderr)
            handler.setFormatter(JsonFormatter())
            handler._hindsight_json = True  # type: ignore[attr-defined]
            logger.addHandler(handler)
        logger.setLevel(chosen.upper())
        logger.propagate = False


def quote_briefly(text: str, limit: int = 60) -> str:
    """``text`` cut to ``limit`` characters with its length: logs never quote a caller's megabytes."""
    return text if len(text) <= limit else f"{text[: limit - 3]}... ({len(text)} chars)"


ID_ARGUMENTS = frozenset({"id", "memory_id", "session_id", "request_id", "agent_id", "turn_id"})
"""Arguments that name a memory, a conversation, an agent or a call: logged as they are."""
ENUM_ARGUMENTS: dict[str, frozenset[str]] = {
    "kind": frozenset(k.value for k in Kind),
    "role": frozenset(r.value for r in Role),
    "tier": frozenset(t.value for t in Tier),
    "status": frozenset(s.value for s in Status),
}
"""Arguments with a fixed set of values: logged when the value is one of them, else as text."""
ENUM_VALUES = frozenset().union(*ENUM_ARGUMENTS.values())
_TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?)?(?:Z|[+-]\d{2}:?\d{2})?")


def summarize_arguments(
    arguments: dict[str, Any], *, names: frozenset[str] | set[str] | None = None, content: bool = False
) -> dict[str, Any]:
    """A loggable view of a tool call's arguments: sizes, counts, ids and numbers, never memory text.

    Text (content, queries, context, metadata values, entities...) becomes ``#hash (n chars)``;
    ids, numbers, flags, enum values and timestamps are shown; lists and objects as their size.
    Only argument names in ``names`` (the tool's parameters) are shown as keys: a caller could
    put anything in a name. ``content=True`` (``HINDSIGHT_LOG_CONTENT``) quotes text, cut to 200
    characters, for debugging.
    """
    out: dict[str, Any] = {}
    for raw_key, value in list(arguments.items())[:20]:
        raw_key = str(raw_key)
        if content or (names is not None and raw_key in names):
            key = quote_briefly(raw_key, 40)
        else:
            key = f"unknown argument {text_summary(raw_key)}"
        out[key] = _summarize_value(raw_key, value, content=content)
    if len(arguments) > 20:
        out["..."] = f"{len(arguments) - 20} more arguments"
    return out


def _summarize_value(key: str, value: Any, *, content: bool) -> Any:
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, str):
        if content:
            return quote_briefly(value, 200)
        safe = (
            (key in ID_ARGUMENTS and len(value) <= 200)
            or value in ENUM_ARGUMENTS.get(key, ())
            or (key == "occurred_at" and _TIMESTAMP.fullmatch(value) is not None)
        )
        return value if safe else text_summary(value)
    if isinstance(value, list):
        return f"[{len(value)} items]"
    if isinstance(value, dict):
        if content:
            shown = json.dumps(value, ensure_ascii=False, default=str)
            return value if len(shown) <= 300 else f"{{{len(value)} keys}}"
        return f"{{{len(value)} keys}}"
    return type(value).__name__


def loggable_error(
    message: str,
    arguments: dict[str, Any],
    *,
    names: frozenset[str] | set[str] | None = None,
    keep: tuple[str | None, ...] = (),
    content: bool = False,
) -> str:
    """A tool error's message for the log line: what the caller sent is replaced by its summary.

    An error may quote the bad value (``kind: 'my PIN is 4321' is not one of...``, a pydantic
    error's ``(got '...')``): each caller string and each quoted span goes, except ids, the
    namespace, enum values and the tool's argument names (``names``), so "no memory 'ab12' in
    namespace 'u1'" and "top_k: ..." stay readable.
    """
    if content:
        return quote_briefly(message, 300)
    secrets, kept = call_strings(arguments, names=names)
    return quote_briefly(
        redact(message, secrets=secrets, keep=[*kept, *(k for k in keep if k)], allow_content=False), 300
    )


def call_strings(
    arguments: dict[str, Any], *, names: frozenset[str] | set[str] | None = None, tool: str | None = None
) -> tuple[list[str], list[str]]:
    """(what a log must not show, what it may) of one tool call: for ``redaction.call_text``.

    Not shown: every string value, the names of unknown arguments, an unknown ``tool``'s name.
    Shown: ids, enum values and the tool's argument names (``names``).
    """
    known = names or set()
    ids = [v for k, v in arguments.items() if k in ID_ARGUMENTS and isinstance(v, str)]
    secrets = [*caller_strings(list(arguments.values())), *(str(k) for k in arguments if k not in known)]
    return [*secrets, *([tool] if tool else [])], [*ids, *ENUM_VALUES, *known]


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
            "hindsight_mcp_rate_limited",
            "requests (tool calls, resource reads, /debug, viewer pages) refused by the per-namespace rate limit",
            registry=self.registry,
        )

        self.upkeep_runs = Counter(
            "hindsight_upkeep_runs",
            "namespace upkeep runs by trigger (schedule, tool) and outcome (ok, error, dry_run)",
            ["trigger", "outcome"],
            registry=self.registry,
        )
        self.upkeep_duration = Histogram(
            "hindsight_upkeep_duration_seconds",
            "duration of one namespace's upkeep run",
            ["trigger"],
            buckets=_UPKEEP_BUCKETS,
            registry=self.registry,
        )
        self.upkeep_memories = Counter(
            "hindsight_upkeep_memories",
            "memories upkeep compressed (turns folded), merged, consolidated, decayed, archived or evicted",
            ["action"],
            registry=self.registry,
        )
        self.upkeep_step_failures = Counter(
            "hindsight_upkeep_step_failures", "upkeep steps that failed, by step", ["step"], registry=self.registry
        )
        self.upkeep_last_success = Gauge(
            "hindsight_upkeep_last_success_timestamp_seconds",
            "when this process last finished a namespace's upkeep without error (engine clock, Unix time)",
            registry=self.registry,
        )
        self.upkeep_lease_held = Gauge(
            "hindsight_upkeep_lease_held",
            "1 while this replica holds the upkeep lease (runs a scheduled round), else 0",
            registry=self.registry,
        )
        for action in UPKEEP_ACTIONS:  # every series exists from the start, at 0
            self.upkeep_memories.labels(action)

    def observe_call(self, tool: str, outcome: str, seconds: float) -> None:
        """Count one tool call and record its latency, by tool and outcome."""
        self.calls.labels(tool, outcome).inc()
        self.latency.labels(tool, outcome).observe(seconds)

    def observe_upkeep(self, report: UpkeepReport, trigger: str) -> None:
        """Count one namespace's upkeep run: its outcome, duration, what it did to memories, failed steps."""
        trigger = trigger if trigger in UPKEEP_TRIGGERS else "other"
        outcome = "error" if not report.ok else "dry_run" if report.dry_run else "ok"
        self.upkeep_runs.labels(trigger, outcome).inc()
        self.upkeep_duration.labels(trigger).observe(report.seconds)
        for step in report.steps:
            if not step.ok:
                self.upkeep_step_failures.labels(step.step if step.step in UPKEEP_STEPS else "other").inc()
        if report.dry_run:
            return  # nothing happened to any memory
        for action in UPKEEP_ACTIONS:
            if count := report.count(action):
                self.upkeep_memories.labels(action).inc(count)
        if report.ok:
            self.upkeep_last_success.set(report.started_at.timestamp() + report.seconds)


def log_upkeep(report: UpkeepReport, trigger: str, **context: Any) -> None:
    """One JSON line per namespace run: namespace, trigger, outcome, time, counts by action, each step, errors."""
    fields: dict[str, Any] = {
        "namespace": report.namespace,
        "trigger": trigger,
        **context,
        "dry_run": report.dry_run,
        "outcome": "error" if not report.ok else "dry_run" if report.dry_run else "ok",
        "seconds": report.seconds,
        "counts": {action: report.count(action) for action in UPKEEP_ACTIONS},
        "steps": {step.step: {"ok": step.ok, "seconds": step.seconds, **step.counts} for step in report.steps},
    }
    if not report.ok:
        fields["errors"] = {step: quote_briefly(redact(error), 300) for step, error in report.errors.items()}
    log.log(logging.WARNING if not report.ok else logging.INFO, "upkeep", extra={"fields": fields})


class RateLimiter:
    """A token bucket per namespace: ``per_minute`` calls, bursting up to ``burst``.

    One tenant hammering a shared server must not starve the others; a refused call is a
    readable tool error that says when to retry, not a dropped connection.
    """

    def __init__(self, per_minute: float, burst: int | None = None) -> None:
        if not (math.isfinite(per_minute) and per_minute > 0):
            raise ValueError(f"per_minute must be a finite number above 0 (None: no limit), got {per_minute}")
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
