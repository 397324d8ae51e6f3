"""LangChain, LangGraph and langchain 1.x adapters for Hindsight memory.

One module per surface, each a thin translation onto the MCP ``MemoryClient``:

- ``HindsightMemory`` (memory.py): classic ``BaseMemory`` for ``AgentExecutor(memory=...)``.
- ``HindsightMiddleware`` (middleware.py): ``AgentMiddleware`` for ``create_agent``.
- ``HindsightStore`` (store.py): LangGraph ``BaseStore`` (LangGraph agents, LangMem).
- ``HindsightRetriever`` (retriever.py): ``BaseRetriever`` returning ``Document``s.
- ``memory_tools`` (tools.py): ``remember`` / ``recall`` / ``forget`` tools for the model.

Every class takes ``namespace=`` (the user) and, for conversations, ``session_id=``; the
store comes from the environment (``HINDSIGHT_MCP_URL``, ``HINDSIGHT_MCP_COMMAND``,
``HINDSIGHT_CHROMA_URL``, ``HINDSIGHT_STORE``; with none set, ``MemoryEngine()``'s embedded
default ``./.hindsight``) unless ``client=`` or ``engine=`` is given.
"""

# LangChain is the optional [langchain] extra; say how to get it rather than fail on a bare name.
# Only a missing framework module is translated: any other ImportError is a bug and goes through.
_FRAMEWORK = ("langchain", "langchain_core", "langchain_classic", "langgraph")

try:
    from .memory import HindsightMemory
    from .middleware import HindsightMiddleware
    from .retriever import HindsightRetriever
    from .store import HindsightStore
    from .tools import memory_tools
except ModuleNotFoundError as exc:
    if (exc.name or "").partition(".")[0] not in _FRAMEWORK:
        raise
    raise ImportError(
        f"hindsight_integrations.langchain needs LangChain and LangGraph (no module {exc.name!r}): "
        "pip install 'hindsight-integrations[langchain]'",
        name=exc.name,
    ) from exc

__all__ = ["HindsightMemory", "HindsightMiddleware", "HindsightRetriever", "HindsightStore", "memory_tools"]
