"""LlamaIndex integration: chat-engine/agent memory, a ``Memory`` block and a retriever.

* ``HindsightChatMemory`` — ``memory=`` of chat engines and ``FunctionAgent``/``ReActAgent``.
* ``HindsightMemoryBlock`` — a block of ``llama_index.core.memory.Memory``.
* ``HindsightRetriever`` — recalled memories as ``NodeWithScore`` for query engines.

All three write through the Hindsight MCP client (``client=``), an embedded engine wrapped
in an in-process MCP session (``engine=``), or whatever ``HINDSIGHT_MCP_URL``,
``HINDSIGHT_MCP_COMMAND``, ``HINDSIGHT_STORE`` or ``HINDSIGHT_CHROMA_URL`` configure.
"""

from .memory import HindsightChatMemory
from .memory_block import HindsightMemoryBlock
from .retriever import HindsightRetriever

__all__ = ["HindsightChatMemory", "HindsightMemoryBlock", "HindsightRetriever"]
