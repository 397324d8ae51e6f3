"""LoCoMo conversations as data: the forgiving loader behind every LoCoMo benchmark.

A file may hold one sample or a list of them, turns may sit under ``conversation`` or at the
top level, sessions may lack a date (they get the previous session's date plus a day, so
chronology survives), turns may lack a ``dia_id`` (one is made from the position), and
evidence may be written as ``"D8:6; D9:17"`` or ``"D30:05"``. Evidence ids that name no turn
of the conversation are dropped (no retriever can return them) and counted in ``skipped``.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

log = logging.getLogger("hindsight.bench.locomo")

# 6 and 7 are the Chinese sets' (zh_dev): a fact that changed, an English question about Chinese turns.
CATEGORY_NAMES = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
    6: "knowledge update",
    7: "cross-lingual",
}
_DIA_ID = re.compile(r"D\s*:?\s*(\d+)\s*:\s*(\d+)", re.I)
_FALLBACK_START = datetime(2000, 1, 1, tzinfo=UTC)


@dataclass
class Turn:
    """One dialogue turn; ``dia_id`` is canonical ("D8:6") so evidence ids compare as strings."""

    dia_id: str
    speaker: str
    text: str
    session: int
    when: datetime

    @property
    def content(self) -> str:
        """The memory text stored for the turn: "Speaker: text" (the speaker is what questions name)."""
        return f"{self.speaker}: {self.text}"


@dataclass
class Question:
    """A scored question: ``evidence`` keeps only ids of turns the conversation actually has."""

    question: str
    evidence: list[str]
    category: int
    answer: Any = None


@dataclass
class Conversation:
    """One LoCoMo sample as read, with counts of what the forgiving loader had to skip or repair."""

    name: str
    turns: list[Turn] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=dict)

    def skip(self, reason: str) -> None:
        """Count one thing left out or repaired while loading, so results say how clean the data was."""
        self.skipped[reason] = self.skipped.get(reason, 0) + 1


def canonical_dia_id(value: Any) -> str:
    """``"D8:06"``, ``"d8:6"``, ``"D:8:6"`` → ``"D8:6"``; anything else is returned stripped."""
    text = str(value).strip()
    match = _DIA_ID.fullmatch(text)
    return f"D{int(match.group(1))}:{int(match.group(2))}" if match else text


def parse_evidence(raw: Any) -> list[str]:
    """Evidence ids from a list or a string, split on ';' / ',' / spaces, de-duplicated in order."""
    items = raw if isinstance(raw, (list, tuple)) else [raw]
    out: list[str] = []
    for item in items:
        if item is None:
            continue
        text = str(item)
        found = [f"D{int(a)}:{int(b)}" for a, b in _DIA_ID.findall(text)]
        out.extend(found or [p.strip() for p in re.split(r"[;,\s]+", text) if p.strip()])
    return list(dict.fromkeys(out))


def parse_session_date(value: Any) -> datetime | None:
    """LoCoMo writes "1:56 pm on 8 May, 2023"; other layouts are tried, None when unreadable."""
    if not isinstance(value, str) or not value.strip():
        return None
    text = value.strip()
    for fmt in (
        "%I:%M %p on %d %B, %Y",
        "%I:%M %p on %d %b, %Y",
        "%Y-%m-%d %H:%M:%S",
        "%Y-%m-%dT%H:%M:%S",
        "%Y-%m-%d",
        "%d %B, %Y",
        "%d %B %Y",
    ):
        try:
            return datetime.strptime(text, fmt).replace(tzinfo=UTC)
        except ValueError:
            continue
    try:
        from dateutil import parser as date_parser  # type: ignore[import-untyped]

        parsed = date_parser.parse(text.replace(" on ", " "), fuzzy=True)
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    except (ImportError, ValueError, OverflowError):
        return None


def _category(value: Any) -> int:
    """The question category as an int; 0 (not a LoCoMo category) when missing or unreadable."""
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def conversation_from_sample(sample: dict[str, Any], name: str) -> Conversation:
    """Build one conversation from a LoCoMo sample (flat or nested under "conversation")."""
    nested = sample.get("conversation")
    conv: dict[str, Any] = nested if isinstance(nested, dict) else sample
    out = Conversation(name=str(sample.get("sample_id") or name))
    sessions = sorted(
        int(m.group(1)) for k, v in conv.items() if (m := re.fullmatch(r"session_(\d+)", k)) and isinstance(v, list)
    )
    previous: datetime | None = None
    for number in sessions:
        when = parse_session_date(conv.get(f"session_{number}_date_time"))
        if when is None:
            out.skip("session_without_date")
            when = previous + timedelta(days=1) if previous else _FALLBACK_START + timedelta(days=number)
        previous = when
        for position, turn in enumerate(conv[f"session_{number}"], start=1):
            if not isinstance(turn, dict):
                out.skip("malformed_turn")
                continue
            text = str(turn.get("text") or "").strip()
            caption = turn.get("blip_caption")
            if caption:
                text = f"{text} [shares image: {caption}]".strip()
            if not text:
                out.skip("empty_turn")
                continue
            dia_id = canonical_dia_id(turn.get("dia_id") or f"D{number}:{position}")
            out.turns.append(Turn(dia_id, str(turn.get("speaker") or "unknown"), text, number, when))
    known = {t.dia_id for t in out.turns}
    for qa in sample.get("qa") or []:
        if not isinstance(qa, dict) or not str(qa.get("question") or "").strip():
            out.skip("malformed_question")
            continue
        category = _category(qa.get("category"))
        if category == 5:
            out.skip("category_5")
            continue
        evidence = parse_evidence(qa.get("evidence"))
        present = [e for e in evidence if e in known]
        if len(present) < len(evidence):
            out.skip("unknown_evidence_id")
        if not present:
            out.skip("question_without_evidence")
            continue
        out.questions.append(Question(str(qa["question"]).strip(), present, category, qa.get("answer")))
    return out


def load_file(path: Path) -> list[Conversation]:
    """The conversations of one JSON file (one sample or a list); non-object entries are ignored.

    Raises ``OSError``/``ValueError`` for an unreadable file, which ``load_directory`` reports.
    """
    data = json.loads(path.read_text(encoding="utf-8"))
    samples = data if isinstance(data, list) else [data]
    out = []
    for n, sample in enumerate(samples):
        if isinstance(sample, dict):
            out.append(conversation_from_sample(sample, path.stem if len(samples) == 1 else f"{path.stem}-{n}"))
    return out


def load_directory(directory: Path) -> tuple[list[Conversation], list[str]]:
    """Every conversation in ``directory`` (*.json), plus the files that could not be read."""
    files = sorted(p for p in Path(directory).glob("*.json") if p.is_file())
    if not files:
        raise FileNotFoundError(f"no LoCoMo *.json files in {directory}")
    conversations: list[Conversation] = []
    unreadable: list[str] = []
    for path in files:
        try:
            found = [c for c in load_file(path) if c.turns]
        except (OSError, ValueError) as exc:
            log.warning("skipping %s: %s", path, exc)
            unreadable.append(path.name)
            continue
        if not found:
            unreadable.append(path.name)
        conversations.extend(found)
    if not conversations:
        raise ValueError(f"no readable LoCoMo conversation in {directory}")
    return conversations, unreadable


def load_conversation(path: Path) -> Conversation:
    """The first conversation of a file (kept for callers that read one file)."""
    return load_file(path)[0]
