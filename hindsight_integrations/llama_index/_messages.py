"""Translate between LlamaIndex ``ChatMessage`` objects and Hindsight turns.

A memory is text, but a chat message is a list of blocks: text, images, audio, documents,
tool calls, thinking. Text (and citation text) is stored as is; a tool call becomes a short
readable line so the turn still says what happened; thinking is never stored (no
chain-of-thought); binary media cannot be embedded as text and are skipped with a log line.

Tool calling needs more than text to be replayed: an OpenAI-style API rejects a ``tool``
message whose call id has no matching assistant tool call. So when a message carries tool
calls or a tool-call id, a JSON snapshot of its replayable parts travels in the turn's
metadata (``SNAPSHOT_KEY``) and ``turn_to_message`` rebuilds the original message from it (a
tool result's text is the turn's own content, so a long result does not have to fit in the
metadata too). ``sanitize_history`` then keeps calls and results paired: a result whose call was
compressed away is dropped, and a call left without a result in the window is replayed as text.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Sequence
from typing import Any

from llama_index.core.base.llms.types import (
    AudioBlock,
    CachePoint,
    ChatMessage,
    CitableBlock,
    CitationBlock,
    DocumentBlock,
    ImageBlock,
    MessageRole,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    VideoBlock,
)

from ..core.model.records import MemoryRecord, Role
from ..core.recall.context import CONTEXT_FOOTER, CONTEXT_HEADER
from ..core.redaction import describe_error

log = logging.getLogger("hindsight.llama_index")

SNAPSHOT_KEY = "llama_index_message"
# Marks the system message this package injects, so it is never written back as a turn.
CONTEXT_FLAG = "hindsight_context"
_REPLAYED_KWARGS = ("tool_call_id", "tool_calls", "name")
_TOOL_ROLES = (MessageRole.TOOL, MessageRole.FUNCTION)
EMPTY_TOOL_RESULT = "(the tool returned nothing)"
"""What a tool result without text is recorded as: the server takes no empty turn, and its call needs a result."""

_ROLE_MAP: dict[str, Role] = {
    MessageRole.USER.value: Role.USER,
    MessageRole.ASSISTANT.value: Role.ASSISTANT,
    MessageRole.CHATBOT.value: Role.ASSISTANT,
    MessageRole.MODEL.value: Role.ASSISTANT,
    MessageRole.TOOL.value: Role.TOOL,
    MessageRole.FUNCTION.value: Role.TOOL,
    MessageRole.SYSTEM.value: Role.SYSTEM,
    MessageRole.DEVELOPER.value: Role.SYSTEM,
}


def hindsight_role(message: ChatMessage) -> Role:
    """The turn role a message is recorded with; roles Hindsight does not know count as the user's."""
    role = message.role.value if isinstance(message.role, MessageRole) else str(message.role)
    return _ROLE_MAP.get(role, Role.USER)


def is_injected_context(message: ChatMessage) -> bool:
    """Whether this is the recalled-memory message we injected (never to be recorded or used as a query)."""
    return bool(message.additional_kwargs.get(CONTEXT_FLAG))


def without_injected_context(message: ChatMessage) -> ChatMessage:
    """``message`` without the recalled block that ``insert_method="user"`` put in front of its text.

    That block is ours, not the user's words: a caller handing the message back (``set``,
    ``put``, ``agent.run(chat_history=...)``) must not have it recorded as said by the user.
    """
    first = message.blocks[0] if message.blocks else None
    if (
        message.role == MessageRole.USER
        and len(message.blocks) > 1
        and isinstance(first, TextBlock)
        and first.text.startswith(CONTEXT_HEADER)
        and first.text.rstrip().endswith(CONTEXT_FOOTER)
    ):
        return message.model_copy(update={"blocks": message.blocks[1:]})
    return message


def _tool_call_line(name: str, arguments: Any) -> str:
    """A tool call as one readable line, so the recorded turn still says what was called."""
    try:
        args = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        args = str(arguments)
    return f"[tool call] {name}({args})"


def message_text(message: ChatMessage) -> str:
    """The storable text of a message; empty when nothing in it can be stored as text."""
    parts: list[str] = []
    skipped: list[str] = []
    for block in message.blocks:
        if isinstance(block, TextBlock):
            parts.append(block.text)
        elif isinstance(block, ToolCallBlock):
            parts.append(_tool_call_line(block.tool_name, block.tool_kwargs))
        elif isinstance(block, CitableBlock):
            parts.extend(c.text for c in block.content if isinstance(c, TextBlock))
        elif isinstance(block, CitationBlock):
            if isinstance(block.cited_content, TextBlock):
                parts.append(block.cited_content.text)
        elif isinstance(block, ThinkingBlock):
            skipped.append("thinking")
        elif isinstance(block, (ImageBlock, AudioBlock, VideoBlock, DocumentBlock)):
            skipped.append(block.block_type)
        elif not isinstance(block, CachePoint):
            skipped.append(getattr(block, "block_type", type(block).__name__))
    if not any(isinstance(b, ToolCallBlock) for b in message.blocks):
        # Older integrations carry OpenAI-style tool calls in additional_kwargs instead of blocks.
        for call in message.additional_kwargs.get("tool_calls") or []:
            function = _get(call, "function")
            if function is not None:
                parts.append(_tool_call_line(str(_get(function, "name") or "?"), _get(function, "arguments")))
    if skipped:
        log.info(
            "not storing %s block(s) of a %s message as memory: only text is remembered",
            ", ".join(skipped),
            message.role,
        )
    return "\n".join(p for p in (part.strip() for part in parts) if p)


def is_tool_result(message: ChatMessage) -> bool:
    """Whether this is the result of a tool call (a tool message answering a call id)."""
    return message.role in _TOOL_ROLES and bool(message.additional_kwargs.get("tool_call_id"))


def turn_text(message: ChatMessage) -> str:
    """What a message is recorded as: its storable text, and for a tool result without any, ``EMPTY_TOOL_RESULT``."""
    text = message_text(message)
    if not text and is_tool_result(message):
        return EMPTY_TOOL_RESULT
    return text


def _get(obj: Any, key: str) -> Any:
    """``key`` of a tool call given as a dict or as an object (integrations use both)."""
    return obj.get(key) if isinstance(obj, dict) else getattr(obj, key, None)


def snapshot(message: ChatMessage) -> dict[str, Any] | None:
    """A JSON-safe copy of a tool-calling message's replayable parts, or None for plain text."""
    kwargs = {k: message.additional_kwargs[k] for k in _REPLAYED_KWARGS if message.additional_kwargs.get(k)}
    has_calls = any(isinstance(b, ToolCallBlock) for b in message.blocks)
    if not kwargs and not has_calls:
        return None
    blocks = [b for b in message.blocks if isinstance(b, (TextBlock, ToolCallBlock))]
    if is_tool_result(message) and not has_calls:
        blocks = []  # its text is the turn's content (``turn_to_message``): a long result fits once, not twice
    data = ChatMessage(role=message.role, blocks=blocks, additional_kwargs=kwargs).model_dump(mode="json")
    try:
        json.dumps(data)
    except (TypeError, ValueError):
        log.info("tool-call details of a %s message are not JSON; storing its text only", message.role)
        return None
    return data


def turn_to_message(record: MemoryRecord) -> ChatMessage:
    """Rebuild the chat message a working-memory turn was recorded from."""
    data = record.metadata.get(SNAPSHOT_KEY)
    if isinstance(data, dict):
        try:
            message = ChatMessage.model_validate(data)
        except Exception as exc:  # noqa: BLE001 - a snapshot from another version must not break the chat
            log.warning("could not restore the message of turn %s (%s); using its text", record.id, describe_error(exc))
        else:
            if not message.blocks:  # a tool result: its text is the turn's content
                message.blocks = [TextBlock(text=record.content)]
            return message
    if record.role is Role.TOOL:
        # A tool result without its call id cannot be replayed as a tool message.
        return ChatMessage(role=MessageRole.ASSISTANT, content=f"[tool result] {record.content}")
    role = {Role.USER: MessageRole.USER, Role.ASSISTANT: MessageRole.ASSISTANT, Role.SYSTEM: MessageRole.SYSTEM}[
        record.role
    ]
    return ChatMessage(role=role, content=record.content)


def _call_ids(message: ChatMessage) -> set[str]:
    """The tool-call ids an assistant message opens, from blocks and from OpenAI-style kwargs."""
    ids = {b.tool_call_id for b in message.blocks if isinstance(b, ToolCallBlock) and b.tool_call_id}
    ids.update(str(_get(c, "id")) for c in message.additional_kwargs.get("tool_calls") or [] if _get(c, "id"))
    return ids


def _calls_as_text(message: ChatMessage, unanswered: set[str]) -> ChatMessage:
    """``message`` with its ``unanswered`` tool calls turned into readable text lines, its other calls kept."""
    blocks: list[Any] = []
    for block in message.blocks:
        if isinstance(block, ToolCallBlock) and block.tool_call_id in unanswered:
            blocks.append(TextBlock(text=_tool_call_line(block.tool_name, block.tool_kwargs)))
        else:
            blocks.append(block)
    kwargs = dict(message.additional_kwargs)
    calls = kwargs.pop("tool_calls", None) or []
    kept = [c for c in calls if str(_get(c, "id")) not in unanswered]
    for call in calls:
        if str(_get(call, "id")) in unanswered and (function := _get(call, "function")) is not None:
            line = _tool_call_line(str(_get(function, "name") or "?"), _get(function, "arguments"))
            blocks.append(TextBlock(text=line))
    if kept:
        kwargs["tool_calls"] = kept
    return message.model_copy(update={"blocks": blocks, "additional_kwargs": kwargs})


def sanitize_history(messages: Sequence[ChatMessage]) -> list[ChatMessage]:
    """Keep tool calls and their results paired, as chat APIs require of a replayed history.

    A tool result whose call is no longer in the window (compressed away) is dropped; a tool
    call whose result is not in the window (never recorded, or refused by the server) is
    replayed as a text line, since an OpenAI- or Anthropic-style API rejects a call without
    its result.
    """
    answered = {str(m.additional_kwargs["tool_call_id"]) for m in messages if is_tool_result(m)}
    out: list[ChatMessage] = []
    open_calls: set[str] = set()
    for message in messages:
        if message.role in _TOOL_ROLES:
            call_id = message.additional_kwargs.get("tool_call_id")
            if call_id is None or call_id not in open_calls:
                log.debug("dropping a tool result whose call is not in the window: %s", call_id)
                continue
        elif message.role == MessageRole.ASSISTANT:
            unanswered = _call_ids(message) - answered
            if unanswered:
                log.debug("replaying tool calls without a result as text: %s", sorted(unanswered))
                message = _calls_as_text(message, unanswered)
            open_calls = _call_ids(message)
        out.append(message)
    return out


def latest_user_text(messages: Iterable[ChatMessage]) -> str:
    """The text of the newest user message (the best recall query), else of the newest message."""
    items = [m for m in messages if not is_injected_context(m)]
    for message in reversed(items):
        if message.role == MessageRole.USER:
            text = message_text(message)
            if text:
                return text
    for message in reversed(items):
        text = message_text(message)
        if text:
            return text
    return ""
