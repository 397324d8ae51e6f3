"""Store and recall memories through the Hindsight MCP server with ``MemoryClient``.

Run it as is to use an in-process server on ./.hindsight-example (no subprocess), or pick a
transport (it writes as the namespace ``example-mcp-client``, its own, so examples sharing a
store never recall each other's facts; over HTTP the token decides):

    python examples/mcp_client.py --stdio                    # spawn `python -m hindsight_integrations.mcp`
    python -m hindsight_integrations.mcp --transport http &  # then:
    python examples/mcp_client.py --http http://127.0.0.1:8765/mcp [--token TOKEN]
"""

from __future__ import annotations

import argparse
import asyncio
import os

from hindsight_integrations.mcp import MemoryClient, MemoryToolError

NAMESPACE = "example-mcp-client"  # this example's own user: never another example's memories


def make_client(args: argparse.Namespace) -> MemoryClient:
    if args.http:
        return MemoryClient.http(args.http, token=args.token)
    os.environ.setdefault("HINDSIGHT_STORE", ".hindsight-example")
    if args.stdio:
        return MemoryClient.stdio(namespace=NAMESPACE)
    from hindsight_integrations import MemoryEngine

    return MemoryClient.in_process(MemoryEngine(llm=False), namespace=NAMESPACE)


async def async_part(client: MemoryClient) -> None:
    result = await client.arecall("what does the user eat?", top_k=3)
    print("\nasync recall:", [h.record.content for h in result.hits])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stdio", action="store_true")
    parser.add_argument("--http", metavar="URL")
    parser.add_argument("--token")
    args = parser.parse_args()

    with make_client(args) as client:
        print(f"connected: {client!r}; tools: {', '.join(client.list_tools())}")
        stored = client.store(
            [
                {"content": "I'm vegetarian and allergic to cashews", "kind": "preference"},
                {"content": "thanks!"},
                {"content": "I moved from Lyon to Montreal in March", "kind": "event"},
            ],
            request_id="example-batch-1",  # run the example twice: the batch is stored once
        )
        print(f"stored {stored.ids}; replayed={stored.replayed}")
        for skipped in stored.skipped:
            print(f"  not stored: {skipped.content!r} ({skipped.reason})")

        recall = client.recall("what should I cook for the user?", top_k=3)
        print("\ncontext block to inject before the model call:\n" + recall.context)

        session = "example-session"
        client.record_turn("Can you suggest a restaurant in my new city?", session_id=session)
        print("\nworking memory:", [t.content for t in client.working_memory(session)])

        try:
            client.call_tool("retrieve_memory", {"query": "anything", "top_k": "lots"})
        except MemoryToolError as err:
            print(f"\na tool error reads like this: {err}")

        asyncio.run(async_part(client))
        print("\n" + client.dump(include_history=False))


if __name__ == "__main__":
    main()
