"""The table of `hindsight bench adversarial`: one row per input and call, with the other tenant's wait."""

from __future__ import annotations

from typing import Any


def adversarial_table(result: dict[str, Any]) -> str:
    """The run as Markdown: one row per input and call."""
    idle = result["other_tenant_idle"]
    lines = [
        "| input | call | result | seconds | × normal | other tenant's recall p50 / max ms |",
        "|---|---|---|---|---|---|",
    ]
    for row in result["rows"]:
        waits = row["other_tenant"]
        failed = f", {waits['errors']} failed" if waits["errors"] else ""
        lines.append(
            f"| {row['input']} | {row['call']} | {row['result']} | {row['seconds']:.2f} | {row['ratio']:.1f} "
            f"| {waits['p50_ms']:.0f} / {waits['max_ms']:.0f}{failed} |"
        )
    lines.append(
        f"\nInputs of {result['size_bytes']:,} bytes; the other tenant's recall while idle: "
        f"p50 {idle['p50_ms']:.0f} ms, max {idle['max_ms']:.0f} ms; server restarts: {result['server_restarts']}"
    )
    return "\n".join(lines)


__all__ = ["adversarial_table"]
