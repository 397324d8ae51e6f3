"""What is worth remembering, and how much, by rules that run offline (docs/architecture.md, "Writing").

Admission is generous, ranking is not: every user statement that carries content becomes a
memory, and importance (not the filter) decides how it ranks and how long it survives decay.
A minimum word count used to drop real facts ("I am allergic to peanuts.", "Use tabs not
spaces"), and keyword matching used to store questions ("Which framework do I like?") as
preferences and tool tracebacks as context. So, in order:

1. Dropped outright: empty text, punctuation or emoji only, greetings, acknowledgements,
   thanks and chain-of-thought.
2. Not remembered (``remember=False``, kind TURN): questions and requests with no statement in
   them, and error output (tracebacks, ``KeyError: …``, any failing tool result). Neither says
   anything true about the user or the project. A question that also states something ("I moved
   to Berlin last week, any tips?") keeps its statement. The reason given says what the text is,
   not where it went: ``record_turn`` keeps every turn in the session's working window, while
   ``store_memory`` keeps nothing of what it skips.
3. User statements get a kind from what they mean: corrections, preferences and standing
   instructions (first-person likes, diet and health, imperatives addressed to the assistant),
   constraints, decisions, personal and project context, habits and tools, events; anything
   else is a plain fact. Importance: explicit preference, constraint or correction 0.9;
   decisions, habits, personal and project context 0.8; events 0.7; plain statements 0.5;
   short low-content statements 0.3.
4. Tool results are kept when they describe configuration or state, dropped when they are
   transient lookups or errors; assistant and system turns only when they state a decision or
   an action (they mostly restate the user).

The patterns are the language packs' ``admission`` rules (``language/rules/*/admission.toml``),
lower-case, compiled once per combination of packs: ``assess`` lowercases once, picks the
packs of the text's scripts once, and runs on every write, so it stays at tens of microseconds.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..language.rules import Rules, for_text
from ..language.text import in_spans, rule_spans
from ..model.records import Kind, Role

ACK_MAX_CHARS = 200
"""Longest text read as a bare acknowledgement (a long "thanks so much, that works perfectly, see you
tomorrow!" is 55): past it a text says more than thanks, and the match stays short whatever the words.
The ``common`` pack's ``admission.acknowledgement`` rule says the same number."""


def _found(rules: Rules, name: str, text: str) -> bool:
    """Whether rule ``admission.<name>`` (of the packs ``rules`` holds) matches in one of ``text``'s spans."""
    return in_spans(rules.pattern(f"admission.{name}"), text)


def _starts(rules: Rules, name: str, text: str) -> bool:
    """Whether rule ``admission.<name>`` matches at the start of ``text``."""
    pattern = rules.pattern(f"admission.{name}")
    return pattern is not None and pattern.match(text) is not None


def _anywhere(rules: Rules, name: str, text: str) -> bool:
    """Whether rule ``admission.<name>`` matches anywhere in ``text`` (rules linear on any length)."""
    pattern = rules.pattern(f"admission.{name}")
    return pattern is not None and pattern.search(text) is not None


CONTEXT_IMPORTANCE = 0.8
"""Decisions, habits, personal and project context (see the module docstring)."""


@dataclass(frozen=True)
class WriteDecision:
    """The filter's verdict on one piece of text.

    ``remember`` False with kind TURN means: keep it in the conversation (the working window),
    never as a long-term memory. ``importance`` still ranks the turn itself.
    """

    remember: bool
    kind: Kind
    importance: float
    reason: str
    ttl_seconds: int | None = None


def _word_count(rules: Rules, text: str) -> int:
    """Words, counting two CJK characters as one (Chinese has no spaces)."""
    words, cjk = rules.pattern("admission.word"), rules.pattern("admission.cjk")
    assert words is not None and cjk is not None  # common's
    return len(words.findall(text)) + len(cjk.findall(text)) // 2


def _asks(rules: Rules, text: str) -> bool:
    return _anywhere(rules, "question_mark", text) or _anywhere(rules, "interrogative", text)


def _statement_part(rules: Rules, text: str) -> str:
    """The part of ``text`` that states something: '' when it only asks (or asks and greets).

    Most writes have no question mark and no question form, and return at once.
    """
    if not _asks(rules, text):
        return text
    sentence_end, clause_end = rules.pattern("admission.sentence"), rules.pattern("admission.clause")
    assert sentence_end is not None and clause_end is not None  # common's
    kept: list[str] = []
    for sentence in (span for part in sentence_end.split(text) for span in rule_spans(part)):
        sentence = sentence.strip()
        if not sentence or _starts(rules, "acknowledgement", sentence):
            continue
        if not _asks(rules, sentence):
            kept.append(sentence)
            continue
        # A question sentence may open with a statement: "I moved to Berlin last week, any tips?"
        clauses = clause_end.split(sentence)
        for clause in clauses[:-1]:
            clause = clause.strip()
            if not clause or _starts(rules, "acknowledgement", clause):
                continue
            words = _word_count(rules, clause)
            opens = words >= 2 and _starts(rules, "statement_opener", clause)
            if _anywhere(rules, "interrogative", clause) or not (words >= 4 or opens):
                break
            kept.append(clause)
    return " ".join(kept)


def assess(content: str, role: Role = Role.USER) -> WriteDecision:
    """Decide whether ``content`` is worth a long-term memory, as what kind, how important."""
    text = content.strip().lower()  # the patterns are lower-case: one lower() beats IGNORECASE matching
    rules = for_text(text)
    if not _anywhere(rules, "content_char", text):
        return WriteDecision(False, Kind.TURN, 0.0, "empty, punctuation or emoji only")
    if _anywhere(rules, "thought", text):
        return WriteDecision(False, Kind.TURN, 0.0, "chain-of-thought is never stored")
    if _starts(rules, "acknowledgement", text):
        return WriteDecision(False, Kind.TURN, 0.2, "greeting or acknowledgement")
    if _anywhere(rules, "error", text) or (role is Role.TOOL and _found(rules, "tool_error", text)):
        return WriteDecision(False, Kind.TURN, 0.2, "error output: not a fact to remember")
    if role is Role.TOOL:
        if _found(rules, "transient_tool", text) and not _found(rules, "state_tool", text):
            return WriteDecision(False, Kind.TURN, 0.2, "transient tool lookup")
        return WriteDecision(True, Kind.CONTEXT, 0.8, "tool result describing state")
    if role is not Role.USER:
        # Assistant and system turns mostly restate the user; keep only decisions and actions.
        said = _statement_part(rules, text)
        if _found(rules, "assistant_decision", said) and _word_count(rules, said) >= 4:
            return WriteDecision(True, Kind.CONTEXT, 0.7, "decision or action stated by the assistant")
        return WriteDecision(False, Kind.TURN, 0.3, f"{role.value} turn without a decision or new fact")
    if _starts(rules, "polite_instruction", text):
        return WriteDecision(True, Kind.PREFERENCE, 0.9, "standing instruction phrased as a question")
    said = _statement_part(rules, text)
    if not said:
        return WriteDecision(False, Kind.TURN, 0.3, "question or request: not a fact to remember")
    return _user_statement(rules, said)


def _user_statement(rules: Rules, text: str) -> WriteDecision:
    """Kind and importance of a user statement (admitted whatever its length: importance ranks it).

    Each rule is tried on the text's bounded spans (``text.rule_spans``); in a text longer than
    one span, a rule's ``^`` is the start of a span, i.e. of one of its sentences.
    """
    if _found(rules, "correction", text):
        return WriteDecision(True, Kind.CORRECTION, 0.9, "correction of an earlier fact")
    if _found(rules, "preference", text):
        return WriteDecision(True, Kind.PREFERENCE, 0.9, "explicit preference or instruction")
    if _found(rules, "decision", text):
        return WriteDecision(True, Kind.CONTEXT, 0.8, "decision")
    if _found(rules, "event", text):
        return WriteDecision(True, Kind.EVENT, 0.7, "time-bound event", ttl_seconds=event_ttl(text))
    if _found(rules, "constraint", text):
        return WriteDecision(True, Kind.CONTEXT, 0.9, "explicit constraint")
    if _found(rules, "habit", text):
        return WriteDecision(True, Kind.PREFERENCE, 0.8, "habit or tool the user relies on")
    if _found(rules, "context", text):
        return WriteDecision(True, Kind.CONTEXT, CONTEXT_IMPORTANCE, "project or personal context")
    if _word_count(rules, text) < 4 and not _anywhere(rules, "digit", text):
        return WriteDecision(True, Kind.FACT, 0.3, "short statement: kept, ranked low")
    return WriteDecision(True, Kind.FACT, 0.5, "user statement")


def event_ttl(text: str) -> int | None:
    """Time-bound facts expire: 'tomorrow' is stale in a couple of days, 'next week' in ten.

    Also what an LLM extraction calls an event gets its TTL here: the model says what happens,
    the rules when it is over.
    """
    text = text.lower()
    rules = for_text(text)
    for name, days in (("today", 2), ("tomorrow", 3), ("this_week", 8), ("next_week", 15)):
        if _found(rules, name, text):
            return days * 86400
    return None
