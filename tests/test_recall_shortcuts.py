"""Recall's faster paths give what the general ones give.

Recall checks ~150 candidates on their in-memory facts and tries many joins of the context
block to fit its budget. Each check reads the facts' attributes in one call
(``RecallFilters.attribute_matcher``), and each join is counted from its lines' sizes
(``context._Lines.tokens``); these tests hold them to the checks and counts they replaced.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest

from hindsight_integrations.core.language.tokens import EstimatingCounter, estimate_tokens
from hindsight_integrations.core.model.records import Kind, MemoryRecord, Status, Tier
from hindsight_integrations.core.recall.context import _Lines, format_context, pack_within_budget
from hindsight_integrations.core.recall.filters import RecallFilters
from hindsight_integrations.core.storage.field_index import MemoryFacts

NOW = datetime(2026, 5, 1, tzinfo=UTC)


def _record(content: str, days: int = 0, **fields: Any) -> MemoryRecord:
    return MemoryRecord(namespace="n", content=content, occurred_at=NOW - timedelta(days=days), **fields)


FACTS = [
    MemoryFacts.from_fields(_record("A plain episodic memory.").flat_fields()),
    MemoryFacts.from_fields(_record("A semantic fact.", 3, tier=Tier.SEMANTIC, importance=0.9).flat_fields()),
    MemoryFacts.from_fields(_record("A working turn.", 1, tier=Tier.WORKING, session_id="s1").flat_fields()),
    MemoryFacts.from_fields(
        _record("Replaced since.", 40, status=Status.SUPERSEDED, valid_until=NOW - timedelta(days=2)).flat_fields()
    ),
    MemoryFacts.from_fields(_record("Expired.", 9, expires_at=NOW - timedelta(hours=1), agent_id="a1").flat_fields()),
    MemoryFacts.from_fields(_record("A preference.", 5, kind=Kind.PREFERENCE, session_id="s2").flat_fields()),
]

FILTERS = [
    RecallFilters(),
    RecallFilters(session_id="s1", tiers=[Tier.WORKING]),
    RecallFilters(session_id="s2"),
    RecallFilters(agent_id="a1"),
    RecallFilters(tiers=[Tier.SEMANTIC]),
    RecallFilters(kinds=[Kind.PREFERENCE, Kind.FACT]),
    RecallFilters(statuses=[Status.SUPERSEDED]),
    RecallFilters(since=NOW - timedelta(days=4), until=NOW - timedelta(days=1)),
    RecallFilters(min_importance=0.8),
]


@pytest.mark.parametrize("include_history", [False, True])
@pytest.mark.parametrize("filters", FILTERS, ids=lambda f: f.model_dump_json(exclude_none=True))
def test_the_attribute_matcher_agrees_with_the_metadata_matcher(filters: RecallFilters, include_history: bool) -> None:
    general = filters.matcher(include_history=include_history, now=NOW)
    fast = filters.attribute_matcher(include_history=include_history, now=NOW)
    assert [fast(f) for f in FACTS] == [general(f) for f in FACTS]


def test_the_filters_above_tell_the_facts_apart() -> None:
    # so the agreement above is not that of two checks that pass everything
    answers = {tuple(f.attribute_matcher(include_history=False, now=NOW)(x) for x in FACTS) for f in FILTERS}
    assert len(answers) >= 5


def test_the_attribute_matcher_refuses_a_filter_on_user_metadata() -> None:
    with pytest.raises(ValueError, match="user metadata"):
        RecallFilters(metadata={"topic": "garden"}).attribute_matcher(include_history=False, now=NOW)


class _JoiningCounter:
    """The default estimate, counted on each joined block as any other counter is."""

    def count(self, text: str) -> int:
        return estimate_tokens(text)


RECORDS = [
    _record("Caroline went to the LGBTQ support group on Tuesday. It was powerful. " * 3, 1),
    _record("我上周去了杭州，西湖边的茶馆很安静。我们喝了龙井，聊到很晚。还去了灵隐寺。", 2),
    _record("Melanie painted a sunrise over the lake last year. She signed up for pottery too.", 3),
    _record("Mixed: 我们在 Lisbon 的 Alfama 吃了 bacalhau。Then we took tram 28 up the hill.", 4),
    _record("Short one.", 5),
    _record("The garden needs water on day 3. The roses want shade. The fig is fine. " * 4, 6),
    _record("Jon lost his job as a banker and opened a dance studio. He calls it a second start.", 7),
]


@pytest.mark.parametrize("budget", [20, 60, 90, 140, 200, 300, 450, 2000])
@pytest.mark.parametrize("changed", [None, {RECORDS[2].id: date(2026, 4, 30)}])
def test_a_budget_counted_from_line_sizes_packs_what_counting_each_block_packs(
    budget: int, changed: dict[str, date] | None
) -> None:
    query = "What did Caroline do at the support group in 杭州?"
    summed = pack_within_budget(RECORDS, budget, query=query, counter=EstimatingCounter(), changed=changed)
    joined = pack_within_budget(RECORDS, budget, query=query, counter=_JoiningCounter(), changed=changed)
    assert summed == joined
    assert pack_within_budget(RECORDS, budget, query=query, changed=changed) == summed  # no counter: the estimate
    if summed:
        assert estimate_tokens(format_context(summed, changed)) <= budget


def test_a_block_counted_from_its_lines_is_counted_as_the_joined_block() -> None:
    # every length from 1 to 120 characters, Latin and CJK: each rounding boundary is crossed
    lines = _Lines({RECORDS[0].id: date(2026, 4, 30)})
    for size in range(1, 121):
        for text in ("x" * size, "杭" * (size // 3) + "y" * (size - size // 3)):
            pairs = [(record, text[: size - n]) for n, record in enumerate(RECORDS[:3]) if size - n > 0]
            assert lines.tokens(pairs) == estimate_tokens(lines.block(pairs)), (size, text)
    assert lines.tokens([]) == estimate_tokens(lines.block([])) == 0


def test_a_line_is_counted_from_its_quoted_text_and_what_its_record_puts_around_it() -> None:
    # one text on records whose lines differ around it (a change mark, history), and texts whose
    # quoting escapes characters: each line is counted as the line itself would be
    superseded = _record("x", 8, status=Status.SUPERSEDED, valid_until=NOW - timedelta(days=1))
    records = [RECORDS[0], RECORDS[1], superseded, _record("y", 2, status=Status.SUPERSEDED)]
    lines = _Lines({RECORDS[1].id: date(2026, 4, 30)})
    texts = ['She said "hi"\\ then\tleft.', "Bidi \u202e and DEL \x7f here", "龙井\u2028茶 «é»", "plain"]
    for text in texts:
        for record in records:
            assert lines.tokens([(record, text)]) == estimate_tokens(lines.block([(record, text)])), (text, record)
        pairs = [(record, text) for record in records]
        assert lines.tokens(pairs) == estimate_tokens(lines.block(pairs)), text
