"""What is worth remembering, and how much, by rules that run offline (docs/architecture.md, "Writing").

Greetings, acknowledgements and very short text are dropped; explicit preferences,
constraints, corrections, project context and decisions are always kept; tool results are
kept when they describe configuration or state and dropped when they are transient
lookups; chain-of-thought is never stored. Importance: an explicit user
instruction 0.9, a tool result 0.8, chit-chat 0.2.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .records import Kind, Role

_ACK = re.compile(
    r"^\s*(hi|hello|hey|yo|hiya|good (morning|afternoon|evening|night)|thanks?( you)?( so much| a lot)?|thx|ty|"
    r"ok(ay)?|k|sure|cool|great|nice|awesome|got it|sounds good|yes|yeah|yep|no|nope|bye|goodbye|see you|"
    r"lol|haha+|hmm+|alright|perfect|np|no problem|you'?re welcome|"
    r"你好|您好|谢谢|多谢|好的|好|嗯+|哈+|再见|收到|明白了?|行|可以)"
    r"[\s!.,?~。！，？]*(\s*(thanks?|thank you|again|there|!|:\)))*[\s!.,?~。！，？]*$",
)
_THOUGHT = re.compile(r"^\s*(<think>|thought:|thinking:|let me think|reasoning:|chain of thought)")
_CORRECTION = re.compile(
    r"\b(actually|correction|i meant|i mean|not .{1,40}? but|instead of|no longer|changed (it|that|to)|"
    r"switched (to|from)|turns out|scratch that|wrong|mistake|update:)\b|其实|更正|纠正|不是.{1,20}而是|改成|改为|搞错",
)
_PREFERENCE = re.compile(
    r"\b(i (really )?(prefer|like|love|hate|dislike|enjoy|want|need|can'?t stand)|i don'?t (like|want)|"
    r"my favou?rite|please (always|never|use|don'?t|keep|make)|always|never|call me|i'?m allergic|i'?m vegetarian|"
    r"i'?m vegan)\b|喜欢|偏好|讨厌|不喜欢|希望|请(总是|一直|不要|用)|总是|从不",
)
_CONSTRAINT = re.compile(
    r"\b(must|should not|shouldn'?t|do not|don'?t|required?|requirement|deadline|due|budget|limit|at most|"
    r"at least|no more than|maximum|minimum|before|by (monday|tuesday|wednesday|thursday|friday|saturday|sunday))\b|"
    r"必须|不要|不能|截止|预算|最多|至少",
)
_CONTEXT = re.compile(
    r"\b(project|we use|we'?re using|our (team|stack|app|service|db|database|api|product|company|repo)|"
    r"the (stack|database|server|repo|codebase|service|app)|runs on|deployed|database|framework|version|"
    r"i work (at|for|on|as)|my (name|job|role|company|team|email|address|phone|manager|order|account|birthday|"
    r"wife|husband|partner|son|daughter|dog|cat|city|home)|i live|i'?m (a|an) |i moved|we decided|decided to|"
    r"we'?ll go with|let'?s go with|plan is|order (number|#|no)|ticket|account)\b|"
    r"项目|数据库|我们用|部署|我叫|我住在|我在.{0,10}工作",
)
_EVENT = re.compile(
    r"\b(today|tomorrow|tonight|yesterday|next (week|month|year|monday|tuesday|wednesday|thursday|friday)|"
    r"this (week|weekend|month)|on (monday|tuesday|wednesday|thursday|friday|saturday|sunday)|meeting|appointment|"
    r"flight|trip|interview|birthday party|at \d{1,2}(:\d\d)?\s?(am|pm))\b|明天|今天|下周|会议|约了",
)
_TRANSIENT_TOOL = re.compile(
    r"\b(weather|temperature|forecast|current time|time is|stock price|exchange rate|search results?|"
    r"news|traffic)\b",
)
_STATE_TOOL = re.compile(
    r"\b(config|configuration|setting|version|installed|status|created|updated|saved|path|port|url|env)\b"
)
_DIGITS = re.compile(r"\d")
_DECISION = re.compile(
    r"\b(we decided|decided to|decision|we'?ll go with|let'?s go with|the plan is|agreed|i'?ve (set|configured|created|"
    r"scheduled|booked|deployed|changed|updated)|is now (set|configured|scheduled)|todo|next step)\b|"
    r"决定|计划是|已(设置|创建|安排)",
)


@dataclass(frozen=True)
class WriteDecision:
    """The filter's verdict on one piece of text."""

    remember: bool
    kind: Kind
    importance: float
    reason: str
    ttl_seconds: int | None = None


def _word_count(text: str) -> int:
    cjk = len(re.findall(r"[\u4e00-\u9fff\u3040-\u30ff\uac00-\ud7af]", text))
    return len(re.findall(r"[A-Za-z0-9]+", text)) + cjk // 2


def assess(content: str, role: Role = Role.USER) -> WriteDecision:
    """Decide whether ``content`` is worth a long-term memory, as what kind, how important."""
    text = content.strip().lower()  # the patterns are lower-case: one lower() beats IGNORECASE matching
    if _THOUGHT.search(text):
        return WriteDecision(False, Kind.TURN, 0.0, "chain-of-thought is never stored")
    if _ACK.match(text):
        return WriteDecision(False, Kind.TURN, 0.2, "greeting or acknowledgement")
    if role is Role.TOOL:
        if _TRANSIENT_TOOL.search(text) and not _STATE_TOOL.search(text):
            return WriteDecision(False, Kind.TURN, 0.2, "transient tool lookup")
        return WriteDecision(True, Kind.CONTEXT, 0.8, "tool result describing state")
    if role is not Role.USER:
        # Assistant and system turns mostly restate the user; keep only decisions and actions.
        if _DECISION.search(text) and _word_count(text) >= 4:
            return WriteDecision(True, Kind.CONTEXT, 0.7, "decision or action stated by the assistant")
        return WriteDecision(False, Kind.TURN, 0.3, f"{role.value} turn without a decision or new fact")
    if _CORRECTION.search(text):
        return WriteDecision(True, Kind.CORRECTION, 0.9, "correction of an earlier fact")
    if _PREFERENCE.search(text):
        return WriteDecision(True, Kind.PREFERENCE, 0.9, "explicit preference or instruction")
    if _EVENT.search(text) and _word_count(text) >= 4:
        return WriteDecision(True, Kind.EVENT, 0.7, "time-bound event", ttl_seconds=_event_ttl(text))
    if _CONSTRAINT.search(text) and _word_count(text) >= 4:
        return WriteDecision(True, Kind.CONTEXT, 0.9, "explicit constraint")
    if _CONTEXT.search(text) and _word_count(text) >= 4:
        return WriteDecision(True, Kind.CONTEXT, 0.8, "project or personal context")
    if _word_count(text) < 4 and not _DIGITS.search(text):
        return WriteDecision(False, Kind.TURN, 0.2, "too short to be worth remembering")
    if _word_count(text) >= 6 or _DIGITS.search(text):
        return WriteDecision(True, Kind.FACT, 0.5, "user statement")
    return WriteDecision(False, Kind.TURN, 0.2, "small talk")


def _event_ttl(text: str) -> int | None:
    """Time-bound facts expire: 'tomorrow' is stale in a couple of days, 'next week' in ten."""
    lowered = text.lower()
    if re.search(r"\b(today|tonight)\b|今天", lowered):
        return 2 * 86400
    if re.search(r"\b(tomorrow)\b|明天", lowered):
        return 3 * 86400
    if re.search(
        r"\b(this week|this weekend|on (monday|tuesday|wednesday|thursday|friday|saturday|sunday))\b", lowered
    ):
        return 8 * 86400
    if re.search(r"\bnext (week|monday|tuesday|wednesday|thursday|friday)\b|下周", lowered):
        return 15 * 86400
    return None
