"""``python -m hindsight_integrations.mcp``: run the memory server (same options as ``hindsight serve``).

Every option has an environment fallback so an MCP host config (Claude Desktop, an IDE)
can set it through ``env`` without a wrapper script.
"""

from __future__ import annotations

import argparse
import sys

from ..core.errors import HindsightError
from .listening import DEFAULT_HOST, DEFAULT_PORT, TRANSPORTS, listening


def parser() -> argparse.ArgumentParser:
    """The command line; every option falls back to an environment variable an MCP host config can set."""
    p = argparse.ArgumentParser(prog="python -m hindsight_integrations.mcp", description="Hindsight MCP memory server")
    p.add_argument(
        "--transport",
        choices=TRANSPORTS,
        default=None,
        help="stdio (default: the MCP host owns the process) or http (streamable HTTP at /mcp) "
        "(env HINDSIGHT_MCP_TRANSPORT)",
    )
    p.add_argument("--host", default=None, help=f"HTTP bind address (env HINDSIGHT_MCP_HOST, default {DEFAULT_HOST})")
    p.add_argument("--port", type=int, default=None, help=f"HTTP port (env HINDSIGHT_MCP_PORT, default {DEFAULT_PORT})")
    p.add_argument(
        "--namespace", default=None, help="namespace served in stdio mode / without tokens (env HINDSIGHT_NAMESPACE)"
    )
    p.add_argument(
        "--tokens-file",
        default=None,
        help='HTTP auth: JSON {"tokens": {"<token>": "<namespace>"}} (env HINDSIGHT_TOKENS_FILE)',
    )
    p.add_argument("--store", default=None, help="embedded Chroma directory (env HINDSIGHT_STORE)")
    p.add_argument(
        "--chroma-url", default=None, help="Chroma server URL instead of a directory (env HINDSIGHT_CHROMA_URL)"
    )
    p.add_argument(
        "--stateful", action="store_true", help="HTTP: keep MCP sessions in memory (default: stateless, for replicas)"
    )
    p.add_argument(
        "--rate-limit",
        type=float,
        default=None,
        help="HTTP: requests (tool calls, resource reads, /debug) per minute per namespace (env HINDSIGHT_RATE_LIMIT)",
    )
    return p


def main(argv: list[str] | None = None) -> int:
    """Serve until stopped; a configuration error is one line on stderr and exit status 2, not a traceback."""
    args = parser().parse_args(argv)
    from .startup import run

    try:
        where = listening(transport=args.transport, host=args.host, port=args.port)
        run(
            transport=where.transport,
            host=where.host,
            port=where.port,
            namespace=args.namespace,
            tokens_file=args.tokens_file,
            store=args.store,
            chroma_url=args.chroma_url,
            stateless=not args.stateful,
            rate_limit_per_minute=args.rate_limit,
        )
    except HindsightError as exc:
        print(f"hindsight mcp: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
