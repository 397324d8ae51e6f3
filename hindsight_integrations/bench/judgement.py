"""``hindsight bench judgement``: does the write path judge updates, other people's facts, paraphrases and habits?

Each case of ``data/judgement_cases.toml`` gets its own namespace on one engine with the default
settings (the ``auto`` model, so a Chinese case runs on e5) and is written as a user writes it:
through an in-process MCP session, ``store_memory`` once per statement, each dated a few days or
weeks after the one before. Paraphrase and habit cases then run ``consolidate``. Then the case's
question is asked and scored:

* ``update`` / ``cancel``: the last statement's value comes first; for an update the first
  statement is no longer current (it went to history);
* ``kept_apart``: both statements stay current and the question about the other person gets
  theirs first;
* ``paraphrase``: one memory naming the fact answers, not one per wording (a case without a
  question: its statements end as one memory, a source consolidated into it not counted: it is
  kept, linked to it, and recall returns the consolidated memory in its place);
* ``habit``: a consolidated memory of the repeated activity exists and comes first;
* ``contrast``: two statements that look alike and say different things stay two memories
  through the write path and ``consolidate``: neither merged into the other as a repeat nor
  joined with it (the later may make the earlier history: "I don't want type hints" said after
  "I want type hints" is a change of mind).

Set "heldout" (paraphrases and contrasts without questions) was written by someone who had not
read the rules, after them; only its first run is a held-out figure (README §7 says which). Set
"fresh" (24 of each) was written later by a helper who had read neither the rules nor the other
cases, and found three wrong judgements in its first run (README §7).

With ``llm="scripted"`` the engine's judge and distiller are the scripted OpenAI-compatible
server (``scripted_llm``), answering as a good model would for these cases, with faults
injected: what is measured is whether the right candidates reach the judge and what the engine
does with its verdicts.
"""

from __future__ import annotations

import tempfile
import tomllib
from collections import Counter
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from ..core.clock import ManualClock
from ..core.engine import MemoryEngine
from ..core.model.records import MemoryRecord, Tier
from ..core.upkeep.merging import CONSOLIDATION_ORIGIN
from ..mcp.client import MemoryClient
from .report import markdown_table
from .scripted_llm import ScriptedLLMServer, judged_statements, numbered_statements

DATA_FILE: Traversable = resources.files("hindsight_integrations.bench") / "data" / "judgement_cases.toml"
MODES = ("none", "scripted")
KINDS = ("update", "cancel", "kept_apart", "paraphrase", "habit", "contrast")
START = datetime(2026, 3, 2, 19, 0, tzinfo=UTC)
# How far apart a case's statements are said: a change a few weeks on, a repeat over days.
GAPS = {
    "update": timedelta(weeks=4),
    "cancel": timedelta(weeks=3),
    "kept_apart": timedelta(weeks=1),
    "paraphrase": timedelta(days=3),
    "habit": timedelta(days=2),
    "contrast": timedelta(days=3),
}
CASE_SPAN = timedelta(weeks=26)  # each case has its own half year on the engine's clock, which only moves forward
LLM_TIMEOUT = 1.0


class Case(BaseModel):
    """Statements said in order, then a question whose first answer must name ``current``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    set: Literal["issue", "own", "heldout", "fresh"]
    kind: Literal["update", "cancel", "kept_apart", "paraphrase", "habit", "contrast"]
    language: Literal["en", "zh", "mixed"]
    statements: list[str]
    question: str | None = None  # none for a contrast, and a paraphrase scored by what stays
    current: str | None = None
    distilled: str | None = None  # what the scripted LLM distils a paraphrase or habit case to

    @model_validator(mode="after")
    def _asked(self) -> Case:
        if self.kind not in ("paraphrase", "contrast") and not (self.question and self.current):
            raise ValueError(f"a {self.kind} case needs a question and what its answer names (current)")
        if (self.question is None) != (self.current is None):
            raise ValueError("question and current go together")
        if self.kind == "contrast" and len(self.statements) != 2:
            raise ValueError("a contrast case is two statements")
        return self


class _CaseFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    doc: str
    case: list[Case]


def load_cases(path: Path | None = None) -> list[Case]:
    """The cases of ``path`` (the packaged file by default); a malformed file is a ``ValueError`` naming it."""
    source: Traversable | Path = path if path is not None else DATA_FILE
    try:
        return _CaseFile.model_validate(tomllib.loads(source.read_text(encoding="utf-8"))).case
    except (tomllib.TOMLDecodeError, ValidationError) as exc:
        raise ValueError(f"{source}: not a judgement case file: {exc}") from None


class JudgementScript:
    """The replies a good model would give the engine for these cases (``scripted_llm.Script``).

    Statements of one update or cancel case: the later one replaces the earlier; of one
    paraphrase case: the same fact; anything else: both stay. A paraphrase case distils to its
    ``distilled`` sentence (else its first statement), and so does a habit case.
    """

    def __init__(self, cases: Sequence[Case]) -> None:
        self._where: dict[str, tuple[int, int]] = {}
        self._cases = list(cases)
        for n, case in enumerate(cases):
            for position, text in enumerate(case.statements):
                self._where[_key(text)] = (n, position)

    def _locate(self, text: str) -> tuple[int, int] | None:
        """The case and position of a statement, or of the statement a stored piece was split from."""
        key = _key(text)
        found = self._where.get(key)
        if found is None and len(key) >= 8:
            found = next((where for statement, where in self._where.items() if key in statement), None)
        return found

    def extract(self, transcript: str) -> dict[str, Any]:
        """No extraction: the cases are written with ``store_memory``, which takes statements as they are."""
        return {"memories": []}

    def judge(self, prompt: str) -> dict[str, Any]:
        """A verdict per stored statement for the new one."""
        new, stored = judged_statements(prompt)
        return {"verdicts": [self._verdict(new, old) for old in stored]}

    def _verdict(self, new: str, old: str) -> str:
        a, b = self._locate(new), self._locate(old)
        if a is None or b is None or a[0] != b[0]:
            return "keep_both"
        kind = self._cases[a[0]].kind
        if kind == "paraphrase":
            return "merge"
        if kind in ("update", "cancel"):
            return "keep_new" if a[1] > b[1] else "keep_old"
        return "keep_both"

    def distil(self, prompt: str) -> dict[str, Any]:
        """One case's statements become its fact (or habit); statements of several cases are no one fact."""
        found = {(self._locate(s) or (-1, 0))[0] for s in numbered_statements(prompt)}
        if len(found) != 1 or (n := found.pop()) < 0 or self._cases[n].kind == "contrast":
            return {"same_fact": False}
        case = self._cases[n]
        kind = "fact" if case.kind == "habit" else "preference"
        return {"same_fact": True, "content": case.distilled or case.statements[0], "kind": kind, "importance": 0.8}

    def summarise(self, transcript: str) -> str:
        """Not asked: the cases write no conversation turns."""
        return "Nothing to summarise."


def _key(text: str) -> str:
    return " ".join(text.split()).lower()


def _names(record: MemoryRecord, value: str) -> bool:
    return value.lower() in record.content.lower()


def score_case(
    case: Case,
    recalled: Sequence[MemoryRecord],
    active: Sequence[MemoryRecord],
    history: Sequence[MemoryRecord] = (),
) -> tuple[bool, str]:
    """Whether ``case`` passed, given what its question recalled and which memories are current or history; why not."""
    current = {r.content for r in active}
    if case.kind == "contrast":
        own = {r.content for r in [*active, *history]}
        joined = [r.content for r in active if r.source.origin == CONSOLIDATION_ORIGIN]
        kept = all(s in own for s in case.statements) and not joined
        return kept, "" if kept else f"memories: {sorted(own)}" + (f"; consolidated: {joined}" if joined else "")
    if case.current is None:  # a paraphrase told by what stays: one memory, as recall sees them
        ids = {r.id for r in active}
        standing = [r for r in active if r.consolidated_into not in ids]  # a source recall replaces by its fact
        return len(standing) == 1, "" if len(standing) == 1 else f"{len(standing)} memories stay"
    first = recalled[0] if recalled else None
    if first is None:
        return False, "recalled nothing"
    if case.kind in ("update", "cancel", "kept_apart") and not _names(first, case.current):
        return False, f"first recalled: {first.content!r}"
    if case.kind == "update" and case.statements[0] in current:
        return False, "the earlier statement is still current"
    if case.kind == "kept_apart" and not all(s in current for s in case.statements):
        return False, "one of the two is no longer current"
    if case.kind == "paraphrase":
        naming = [r for r in recalled if _names(r, case.current)]
        if len(naming) != 1:
            return False, f"{len(naming)} memories name {case.current!r}"
    if case.kind == "habit":
        habit = next((r for r in active if r.tier is Tier.SEMANTIC and len(r.source.memory_ids) >= 2), None)
        if habit is None:
            return False, "no memory of the habit"
        if first.id != habit.id:
            return False, f"first recalled: {first.content!r}"
    return True, ""


def _run_case(client: MemoryClient, clock: ManualClock, case: Case, start: datetime) -> dict[str, Any]:
    at = start
    for n, text in enumerate(case.statements):
        clock.set(at)
        client.store(text, session_id=f"s{n}", occurred_at=at)
        at += GAPS[case.kind]
    clock.set(at)
    if case.kind in ("paraphrase", "habit", "contrast"):
        client.consolidate()
    recalled = client.recall(case.question).records if case.question else []
    active = client.list(limit=100)
    history = [r for r in client.list(limit=100, include_history=True) if r.id not in {a.id for a in active}]
    passed, why = score_case(case, recalled, active, history)
    return {
        "set": case.set,
        "kind": case.kind,
        "language": case.language,
        "question": case.question,
        "passed": passed,
        "why": why,
        "recalled": [r.content for r in recalled[:3]],
    }


def run_mode(
    llm: str, cases: Sequence[Case], *, store: Path, progress: Callable[[str], None] | None = None
) -> dict[str, Any]:
    """Every case on a fresh engine in ``store``, offline (``none``) or judged by the scripted server."""
    if llm not in MODES:
        raise ValueError(f"unknown --llm {llm!r}; choose from {', '.join(MODES)}")
    server = None
    if llm == "scripted":
        server = ScriptedLLMServer(script=JudgementScript(cases), slow_seconds=LLM_TIMEOUT * 1.5 + 0.2)
    options = server.engine_options(timeout=LLM_TIMEOUT, retries=3) if server is not None else {}
    clock = ManualClock(START)
    engine = MemoryEngine(store=store, llm=None if server else False, clock=clock, **options)
    results = []
    try:
        for n, case in enumerate(cases):
            with MemoryClient.in_process(engine, namespace=f"case-{n}") as client:
                results.append(_run_case(client, clock, case, START + n * CASE_SPAN))
            if progress is not None:
                progress(f"{llm}: case {n + 1}/{len(cases)} {'passed' if results[-1]['passed'] else 'failed'}")
    finally:
        engine.close()  # the background writers are done before the caller removes ``store``
        if server is not None:
            server.close()
    return {
        "mode": "offline (rules)" if llm == "none" else "scripted LLM over HTTP, faults injected",
        "passed": sum(r["passed"] for r in results),
        "total": len(results),
        "by_set_and_kind": _tally(results),
        "cases": results,
        **({"llm_server": server.stats()} if server is not None else {}),
    }


def _tally(results: Sequence[dict[str, Any]]) -> dict[str, str]:
    passed: Counter[str] = Counter()
    total: Counter[str] = Counter()
    for r in results:
        for key in (f"{r['set']} {r['kind']}", f"{r['set']} {r['language']}"):
            total[key] += 1
            passed[key] += r["passed"]
    return {key: f"{passed[key]}/{total[key]}" for key in sorted(total)}


def run_judgement(
    llm: str = "both", *, cases_file: Path | None = None, progress: Callable[[str], None] | None = None
) -> dict[str, Any]:
    """The cases in each mode asked for (``none``, ``scripted`` or ``both``), each on its own fresh store."""
    modes = MODES if llm == "both" else (llm,)
    cases = load_cases(cases_file)
    out: dict[str, Any] = {"cases_file": str(cases_file or DATA_FILE.name), "modes": {}}
    for mode in modes:
        with tempfile.TemporaryDirectory(prefix="hindsight-judgement-") as tmp:
            out["modes"][mode] = run_mode(mode, cases, store=Path(tmp), progress=progress)
    return out


def judgement_table(result: dict[str, Any]) -> str:
    """Cases passed by set and kind (and language), one column per mode."""
    modes = list(result["modes"])
    keys = sorted({k for m in modes for k in result["modes"][m]["by_set_and_kind"]})
    rows = [[key, *(result["modes"][m]["by_set_and_kind"].get(key, "") for m in modes)] for key in keys]
    rows.append(["all", *(f"{result['modes'][m]['passed']}/{result['modes'][m]['total']}" for m in modes)])
    return markdown_table(["cases", *modes], rows)


__all__ = ["Case", "JudgementScript", "judgement_table", "load_cases", "run_judgement", "run_mode", "score_case"]
