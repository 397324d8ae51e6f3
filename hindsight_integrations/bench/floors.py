"""``hindsight bench floors``: what each model's relevance floors separate, and whether the choice holds unseen.

A recall returns nothing when its best candidate is not close enough to the question (the
relevance floor) or, for multilingual-e5-small, when its best candidates' centred similarity is
too low (the centred floor, ``core/embedding/centring.py``). A floor must never gate a question
whose answer is in the store, and should gate a question about nothing it holds. This benchmark
measures both, on the numbers recall itself compares (``MemoryEngine.relevance``):

1. every conversation of every ``--data`` directory is written on the default path (one
   ``record_turn`` per turn, as the adapters write; ``locomo_default.write_turns``) into a
   namespace of its own, with the model the setting gives it (``auto`` by default: MiniLM for an
   English conversation, e5 for a Chinese one);
2. every question with evidence (its answer is in the store) is an *answered* question; the
   ``OFF_TOPIC`` questions, English and Chinese, are about nothing these conversations hold;
3. per model, the shipped floors are scored (answered questions gated, off-topic questions let
   through), and so is a leave-one-conversation-out check: for each conversation, the floors
   the rule (``floors_by_rule``) picks on that model's *other* conversations, scored on it.

The rule is how e5's floors were set: the raw floor is the lowest closeness of an answered
question, rounded down to 0.01; the centred floor sits ``CENTRED_MARGIN`` under the lowest
centred similarity of an answered question. If the held-out conversations keep their answered
questions under the floors chosen without them, the choice carries over.
"""

from __future__ import annotations

import math
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.engine import MemoryEngine
from ..core.progress import ProgressCallback, prefixed
from ..core.recall.floors import clears_floors
from ..mcp.client import MemoryClient
from .locomo_data import Conversation, load_directory
from .locomo_default import OFF_TOPIC, write_turns
from .settling import rebuilt

CENTRED_MARGIN = 0.05
"""How far under the lowest answered question's centred similarity the centred floor is set."""

# Chinese questions about nothing the conversations of ../shared/data/zh_dev hold (family, a
# café, a flat being renovated, running, health): written for this benchmark, never tuned on.
OFF_TOPIC_ZH = (
    "水在标准大气压下的沸点是多少度？",
    "1998年世界杯冠军是哪个国家？",
    "怎么在nginx里配置TLS证书？",
    "秘鲁的首都是哪座城市？",
    "TCP和UDP有什么区别？",
    "木星有多少颗卫星？",
    "Python哪个版本加入了海象运算符？",
    "日本的国内生产总值是多少？",
    "碳-14的半衰期是多久？",
    "《卡拉马佐夫兄弟》的作者是谁？",
    "月球离地球有多远？",
    "SQL的左连接怎么写？",
    "太阳系里哪颗行星的一天最长？",
    "Rust项目怎么用release模式编译？",
    "坏血病有哪些症状？",
    "光在真空中每秒走多少公里？",
    "珠穆朗玛峰的海拔是多少米？",
    "Kubernetes默认的Pod驱逐超时是多少？",
    "《红楼梦》的作者是谁？",
    "二氧化碳的分子量是多少？",
)


@dataclass(frozen=True)
class Measured:
    """One question's two numbers (``MemoryEngine.relevance``) in one conversation's namespace."""

    conversation: str
    answered: bool
    closeness: float | None
    centred: float | None
    question: str = ""


@dataclass(frozen=True)
class Floors:
    """A raw and a centred floor (None: no centred floor)."""

    raw: float
    centred: float | None


def gated(m: Measured, floors: Floors) -> bool:
    """Whether a recall of ``m`` returns nothing under ``floors``: the test recall itself applies."""
    return not clears_floors(m.closeness, lambda: m.centred, floor=floors.raw, centred_floor=floors.centred)


def floors_by_rule(answered: Sequence[Measured], centred: bool) -> Floors:
    """The floors the rule picks on ``answered`` (see the module docstring); ``centred``: the model has one."""
    raw = min((m.closeness for m in answered if m.closeness is not None), default=0.0)
    low = min((m.centred for m in answered if m.centred is not None), default=None)
    return Floors(
        raw=math.floor(raw * 100) / 100,
        centred=math.floor((low - CENTRED_MARGIN) * 100) / 100 if centred and low is not None else None,
    )


def _score(measured: Sequence[Measured], floors: Floors) -> dict[str, Any]:
    answered = [m for m in measured if m.answered]
    off_topic = [m for m in measured if not m.answered]
    return {
        "answered": len(answered),
        "answered_gated": sum(gated(m, floors) for m in answered),
        "off_topic": len(off_topic),
        "off_topic_gated": sum(gated(m, floors) for m in off_topic),
    }


def _lowest(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return round(min(present), 4) if present else None


def measure(
    engine: MemoryEngine, conversation: Conversation, namespace: str, steps: ProgressCallback | None = None
) -> tuple[str, Floors, list[Measured]]:
    """Write ``conversation`` on the default path, then measure its questions and the off-topic ones.

    Returns the namespace's model, the floors it is recalled with and every question's numbers.
    """
    engine.drop_namespace(namespace)
    with MemoryClient.in_process(engine, namespace=namespace) as client:
        write_turns(client, conversation, steps)
    model = engine.embedding_model(namespace) or "?"
    rebuilt(engine.chroma.namespace(namespace))
    asked = [(q.question, True) for q in conversation.questions if q.evidence]
    asked += [(q, False) for q in (*OFF_TOPIC, *OFF_TOPIC_ZH)]
    seen = [engine.relevance(question, namespace=namespace) for question, _ in asked]
    floors = Floors(seen[0].floor, seen[0].centred_floor)  # the same for every question of the namespace
    measured = [
        Measured(conversation.name, answered, r.closeness, r.centred, question)
        for (question, answered), r in zip(asked, seen, strict=True)
    ]
    return model, floors, measured


def run_floors(
    data: Sequence[Path],
    *,
    model: str = "auto",
    progress: Callable[[str], None] | None = None,
    steps: ProgressCallback | None = None,
) -> dict[str, Any]:
    """Measure every conversation of ``data`` (see the module docstring); results grouped by model."""
    conversations: list[Conversation] = []
    for directory in data:
        found, _ = load_directory(directory)
        conversations.extend(found)
    by_model: dict[str, list[Measured]] = {}
    shipped: dict[str, Floors] = {}
    with tempfile.TemporaryDirectory(prefix="hindsight-floors-") as tmp:
        engine = MemoryEngine(store=Path(tmp) / "store", llm=False, embedding_model=model)
        for n, conversation in enumerate(conversations):
            namespace = f"floors-{n:03d}"
            used, floors, measured = measure(engine, conversation, namespace, prefixed(steps, conversation.name))
            by_model.setdefault(used, []).extend(measured)
            shipped[used] = floors
            if progress:
                progress(f"{conversation.name}: {len(measured)} questions measured on {used}")
        engine.close()  # its background writers are done before the directory goes
    models = {}
    for used, measured in by_model.items():
        names = list(dict.fromkeys(m.conversation for m in measured))
        has_centred = shipped[used].centred is not None
        held_out = []
        for name in names:
            others = [m for m in measured if m.conversation != name and m.answered]
            chosen = floors_by_rule(others, has_centred) if others else shipped[used]
            mine = [m for m in measured if m.conversation == name]
            held_out.append(
                {
                    "conversation": name,
                    "chosen_on_others": {"raw": chosen.raw, "centred": chosen.centred},
                    "held_out": _score(mine, chosen),
                    "shipped": _score(mine, shipped[used]),
                    "lowest_answered": {
                        "closeness": _lowest([m.closeness for m in mine if m.answered]),
                        "centred": _lowest([m.centred for m in mine if m.answered]),
                    },
                    "highest_off_topic": {
                        "closeness": max((m.closeness for m in mine if not m.answered and m.closeness), default=None),
                        "centred": max((m.centred for m in mine if not m.answered and m.centred), default=None),
                    },
                }
            )
        models[used] = {
            "shipped": {"raw": shipped[used].raw, "centred": shipped[used].centred},
            "by_rule_on_all": vars(floors_by_rule([m for m in measured if m.answered], has_centred)),
            "total_shipped": _score(measured, shipped[used]),
            "conversations": held_out,
            "gated_by_shipped": [
                {"conversation": m.conversation, "question": m.question, "closeness": m.closeness, "centred": m.centred}
                for m in measured
                if m.answered and gated(m, shipped[used])
            ],
        }
    return {
        "benchmark": "floors",
        "model_setting": model,
        "data": [str(d) for d in data],
        "off_topic_questions": {"en": len(OFF_TOPIC), "zh": len(OFF_TOPIC_ZH)},
        "centred_margin": CENTRED_MARGIN,
        "models": models,
    }


def floors_table(result: dict[str, Any]) -> str:
    """One row per model and conversation: floors chosen without it, what they and the shipped floors gate."""
    lines = [
        "| model | conversation | floors chosen on the others (raw / centred) | answered gated: held-out / shipped "
        "| off-topic recalling nothing: held-out / shipped |",
        "| --- | --- | --- | --- | --- |",
    ]
    for model, entry in result["models"].items():
        for row in entry["conversations"]:
            chosen, held, shipped = row["chosen_on_others"], row["held_out"], row["shipped"]
            centred = "-" if chosen["centred"] is None else f"{chosen['centred']:.2f}"
            lines.append(
                f"| {model} | {row['conversation']} | {chosen['raw']:.2f} / {centred} "
                f"| {held['answered_gated']} / {shipped['answered_gated']} of {held['answered']} "
                f"| {held['off_topic_gated']} / {shipped['off_topic_gated']} of {held['off_topic']} |"
            )
        shipped_floors = entry["shipped"]
        centred = "-" if shipped_floors["centred"] is None else f"{shipped_floors['centred']:.2f}"
        total = entry["total_shipped"]
        lines.append(
            f"| {model} | all, shipped floors | {shipped_floors['raw']:.2f} / {centred} "
            f"| {total['answered_gated']} of {total['answered']} | {total['off_topic_gated']} of {total['off_topic']} |"
        )
    return "\n".join(lines)


__all__ = [
    "CENTRED_MARGIN",
    "OFF_TOPIC_ZH",
    "Floors",
    "Measured",
    "floors_by_rule",
    "floors_table",
    "gated",
    "run_floors",
]
