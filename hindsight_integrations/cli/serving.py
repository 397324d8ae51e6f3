"""The commands that serve memory: the MCP server, its bearer tokens, the viewer."""

from __future__ import annotations

from typing import Annotated

import typer

from ..core.errors import InvalidInputError
from ..terminal import console, reported
from . import options
from .options import NamespaceOption


def serve(
    transport: Annotated[
        str | None, typer.Option(help="stdio or http (env HINDSIGHT_MCP_TRANSPORT, default stdio)")
    ] = None,
    host: Annotated[
        str | None, typer.Option(help="HTTP bind address (env HINDSIGHT_MCP_HOST, default 127.0.0.1)")
    ] = None,
    port: Annotated[int | None, typer.Option(help="HTTP port (env HINDSIGHT_MCP_PORT, default 8765)")] = None,
    tokens_file: Annotated[str | None, typer.Option(help='JSON {"tokens": {token: namespace}} for HTTP auth.')] = None,
    namespace: NamespaceOption = None,
    stateful: Annotated[
        bool, typer.Option("--stateful", help="HTTP: keep MCP sessions in memory (default: stateless, for replicas).")
    ] = False,
    rate_limit: Annotated[
        float | None,
        typer.Option(
            help="Requests (tool calls, resource reads, /debug) a minute per namespace "
            "(env HINDSIGHT_RATE_LIMIT, default no limit)."
        ),
    ] = None,
) -> None:
    """Run the MCP memory server (stdio for local agents, streamable HTTP for shared use).

    It takes the options ``python -m hindsight_integrations.mcp`` takes, decided the same way
    (``mcp/listening.py``, ``config.load_settings``): an option wins over its ``HINDSIGHT_*``
    variable, and a bad value is refused naming the option or the variable it came from.
    """
    with reported():
        options.settings(namespace, serving=True, rate_limit=rate_limit)
        from ..mcp.listening import listening

        where = listening(transport=transport, host=host, port=port)
        from ..mcp.server import run

        run(
            transport=where.transport,
            host=where.host,
            port=where.port,
            namespace=options.chosen_namespace(namespace),
            tokens_file=tokens_file,
            store=str(options.given.store) if options.given.store else None,
            chroma_url=options.given.chroma_url,
            stateless=not stateful,
            rate_limit_per_minute=rate_limit,
        )


def token() -> None:
    """Print a new random bearer token for HINDSIGHT_TOKENS or a --tokens-file (43 URL-safe characters)."""
    import secrets

    from ..mcp.auth import token_weakness

    value = secrets.token_urlsafe(32)  # 256 random bits
    while token_weakness(value) is not None:  # fewer than 10 distinct characters: never in practice
        value = secrets.token_urlsafe(32)
    typer.echo(value)


def ui(
    port: Annotated[int, typer.Option(help="Port on 127.0.0.1.")] = 8765,
    browser: Annotated[bool, typer.Option("--browser/--no-browser", help="Open the page in a web browser.")] = True,
) -> None:
    """See the memory: serve the viewer on 127.0.0.1 over this store and open it in your browser."""
    with reported():
        options.settings(serving=True)
        if not 0 < port < 65536:
            raise InvalidInputError("port", f"must be between 1 and 65535, got {port}")
        from ..mcp.server import run
        from ..mcp.viewer import open_when_ready

        base = f"http://127.0.0.1:{port}"
        console.print(f"Memory viewer: {base}/ui  (Ctrl+C stops it)")
        if browser:
            open_when_ready(f"{base}/ui", health_url=f"{base}/health")
        run(
            transport="http",
            host="127.0.0.1",
            port=port,
            namespace=options.given.namespace,
            store=str(options.given.store) if options.given.store else None,
            chroma_url=options.given.chroma_url,
            upkeep=False,  # a viewer shows the memory as it is; `hindsight serve` keeps it
        )


__all__ = ["serve", "token", "ui"]
