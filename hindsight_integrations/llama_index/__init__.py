"""LlamaIndex integration: chat-engine/agent memory, a ``Memory`` block and a retriever.

* ``HindsightChatMemory`` — ``memory=`` of chat engines and ``FunctionAgent``/``ReActAgent``.
* ``HindsightMemoryBlock`` — a block of ``llama_index.core.memory.Memory``.
* ``HindsightRetriever`` — recalled memories as ``NodeWithScore`` for query engines.

All three write through the Hindsight MCP client (``client=``), an embedded engine wrapped
in an in-process MCP session (``engine=``), or whatever ``HINDSIGHT_MCP_URL``,
``HINDSIGHT_MCP_COMMAND``, ``HINDSIGHT_STORE`` or ``HINDSIGHT_CHROMA_URL`` configure (with
none set, ``MemoryEngine()``'s embedded default ``./.hindsight``).
"""

# LlamaIndex is the optional [llama-index] extra; say how to get it rather than fail on a bare name.
# Only a missing llama_index module is translated: any other ImportError is a bug and goes through.
try:
    from .memory import HindsightChatMemory
    from .memory_block import HindsightMemoryBlock
    from .retriever import HindsightRetriever
except ModuleNotFoundError as exc:
    if (exc.name or "").partition(".")[0] != "llama_index":
        raise
    raise ImportError(
        f"hindsight_integrations.llama_index needs LlamaIndex (no module {exc.name!r}): "
        "pip install 'hindsight-integrations[llama-index]'",
        name=exc.name,
    ) from exc

__all__ = ["HindsightChatMemory", "HindsightMemoryBlock", "HindsightRetriever"]
