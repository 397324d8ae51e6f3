"""Recall as named stages: search, admit, widen, rank, fetch, pack (docs/architecture.md, "Recall").

1. *search*: BM25 over the namespace's lexical index, then the dense search over the memories'
   own vectors and over their context vectors: exact, over the in-memory copies, when they are
   small and hold all that Chroma holds (``NamespaceStore.copies_current``: its reads start with
   the embedding, and their verdict is awaited after *rank*, which runs again from Chroma if it
   is no), else Chroma's ANN. Over a large namespace BM25 runs in a worker thread while the
   query is embedded; over a small one it takes ~0.2 ms after it, which measured faster than
   beside the embedding, whose model keeps both cores of a small machine busy. Right after this
   process wrote, recall first waits for the context vectors of what it wrote, and embeds the
   query and rebuilds the lexical index in the meantime (``LexicalIndex.prepare``). The default
   filter (valid long-term memories) keeps nearly everything, so the dense search runs
   unfiltered with twice the pool and candidates are checked afterwards; a narrowing filter is
   passed to Chroma instead.
2. *admit*: candidates that pass the filters, checked on the in-memory facts, with the vectors
   needed to score the ones a vector search did not return.
3. *widen*: when the unfiltered search returned mostly inadmissible memories (working turns,
   history), look deeper, and then filter after all: over the whole in-memory copy when recall
   may search it, else by asking Chroma.
4. *rank*: ``ranking.rank`` fuses the signals; a consolidated memory stands in for its sources
   (``ranking.prefer_consolidated``).
5. *fetch*: only the finalists are read from Chroma, and re-checked there, so a memory another
   process forgot a moment ago is never returned; from memory when nothing changed elsewhere.
   With the opt-in second stage (``rerank.py``), the best ``rerank_depth`` are fetched, read
   with the question by a cross-encoder, and the ``top_k`` of the fused order kept.
6. *pack*: fit the token budget; among what fits, a memory announcing a change of another goes
   above it, which the context marks as changed since (``currency.py``); count the accesses,
   format the context block.

Each stage's time can be measured from outside (``stages.timing_stages``).
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from ..embedding.protocol import embed_query
from ..language.when import TimeFrame, names_a_time, time_frames, warm_in_background
from ..model.arguments import coerce_model, context_tokens, fraction, whole_number
from ..model.inputs import validate_content
from ..model.records import MemoryRecord, from_epoch
from ..model.results import RecallHit, RecallResult, Relevance
from ..parts import EngineParts
from ..storage.namespace_store import NamespaceStore, Vector
from ..storage.vector_copy import EXACT_SEARCH_ROWS, Cosines
from .candidates import admissible, lexical_candidates
from .context import format_context, pack_within_budget
from .currency import closeness_by_vectors, current_first
from .filters import RecallFilters, bounded_filters
from .floors import best_centred, best_closeness, passes_floors, ranked_passes
from .history import inherit_from_history
from .ranking import Candidate, Ranked, RecallWeights, prefer_consolidated, rank
from .rerank import Reranker
from .stages import Stopwatch, stopwatch
from .workers import recall_workers

_WIDER = 8  # how much deeper the unfiltered search looks when the nearest hits are mostly history
_CONTEXT_WAIT_SECONDS = 5.0  # a stalled embedder must not stall recall: it ranks without those context vectors


@dataclass(frozen=True)
class RecallRequest:
    """A recall's validated arguments."""

    query: str
    top_k: int
    min_score: float | None
    filters: RecallFilters
    token_budget: int | None
    weights: RecallWeights
    include_history: bool


@dataclass
class _Search:
    """What the search stage found, and what the later stages need to know about it."""

    request: RecallRequest
    now: datetime
    vector: Sequence[float]
    prefiltered: bool  # the dense search ran with the filter: its hits need no check
    with_context: bool  # context vectors take part in this recall
    from_copy: bool  # unfiltered vector searches ran on the in-memory copies (``NamespaceStore.copies_current``)
    dense: dict[str, float]
    context: dict[str, float]
    lexical: dict[str, float]
    lexical_vectors: dict[str, Vector]
    lexical_context_vectors: dict[str, Vector]
    own: Cosines | None  # every memory's cosine by its own vector, when the searches ran on the copies
    framed: Cosines | None  # and by its context vector
    checks: list[Future[bool]]  # the currency checks still running while the copies were searched

    def copies_were_current(self) -> bool:
        """Whether the copies searched held all that Chroma holds: the checks' verdict, waited for."""
        return all(check.result() for check in self.checks)

    def nearest(self, handle: NamespaceStore, n: int) -> list[tuple[str, float]]:
        """The ``n`` memories nearest by their own vectors, unfiltered: from the product already made, if any."""
        if self.own is not None:
            return self.own.nearest(n)
        return handle.query(self.vector, n=n, where=None, from_copy=self.from_copy)


class Recaller:
    """Hybrid recall over any namespace of one engine."""

    def __init__(self, parts: EngineParts) -> None:
        self._parts = parts
        warm_in_background()

    def request(
        self,
        query: str,
        *,
        top_k: int | None,
        min_score: float | None,
        filters: RecallFilters | dict[str, Any] | None,
        token_budget: int | None,
        weights: RecallWeights | dict[str, Any] | None,
        include_history: bool,
    ) -> RecallRequest:
        """Validate a recall's arguments (every error names the argument)."""
        settings = self._parts.settings
        return RecallRequest(
            query=validate_content(query, max_bytes=settings.max_content_bytes, field="query"),
            top_k=settings.default_top_k
            if top_k is None
            else whole_number(top_k, "top_k", low=1, high=settings.max_top_k),
            min_score=None if min_score is None else fraction(min_score, "min_score"),
            filters=bounded_filters(filters, self._parts.limits),
            token_budget=settings.default_token_budget if token_budget is None else context_tokens(token_budget),
            weights=coerce_model(RecallWeights, weights, "weights"),
            include_history=include_history,
        )

    def recall(
        self, handle: NamespaceStore, request: RecallRequest, *, candidates: int | None = None, touch: bool = True
    ) -> RecallResult:
        """Run the stages (see the module docstring); ``candidates`` overrides the search pool size."""
        now = self._parts.clock.now()
        watch = stopwatch()
        search, admitted, ranked, inherited = self._ranked(handle, request, candidates, now, watch)
        if request.min_score is not None:
            ranked = [r for r in ranked if r.similarity >= request.min_score]
        floored = ranked if not request.filters.narrows() else None  # what the relevance floors are judged on
        if floored is not None and not ranked_passes(self._parts, floored, inherited, handle, search.vector):
            ranked = []  # nothing here is about the question
        ranked = prefer_consolidated(ranked, {c.id: c.facts for c in admitted})
        watch.lap("floor")
        reranker = self._parts.reranker
        if reranker is not None and not reranker.reads(request.query):
            reranker = None
        hits, dropped = self._fetch(handle, search, ranked, max(request.top_k, reranker.depth if reranker else 0))
        if dropped and floored and not ranked_passes(self._parts, floored, inherited, handle, search.vector, dropped):
            hits = []  # what cleared the floors was forgotten or changed by another process since the cache saw it
        watch.lap("fetch")
        if reranker is not None:
            hits = _reranked(reranker, request, hits)
            watch.lap("rerank")
        result = self._pack(handle, request, hits, now, touch=touch)
        watch.lap("pack")
        return result

    def relevance(self, handle: NamespaceStore | None, request: RecallRequest) -> Relevance:
        """What the floors see for ``request``: the candidates ``recall`` would rank, measured, none returned.

        The same stages and the same two numbers ``recall`` compares with the floors, so a recall
        that came back empty can be explained, and a floor calibrated on what it really reads.
        A namespace never written (``handle`` None) has no candidate.
        """
        closeness = centred = None
        if handle is not None:
            search, _, ranked, inherited = self._ranked(handle, request, None, self._parts.clock.now(), stopwatch())
            closeness = best_closeness(ranked, inherited)
            centred = best_centred(ranked, handle, search.vector, self._parts)
        floors = self._parts.cosines
        return Relevance(
            query=request.query,
            closeness=closeness,
            centred=centred,
            floor=floors.relevance_floor,
            centred_floor=floors.centred_floor,
            passes=passes_floors(self._parts, closeness, lambda: centred),
        )

    # -- stages ---------------------------------------------------------------------------
    def _ranked(
        self,
        handle: NamespaceStore,
        request: RecallRequest,
        candidates: int | None,
        now: datetime,
        watch: Stopwatch,
        *,
        trust_copies: bool = True,
    ) -> tuple[_Search, list[Candidate], list[Ranked], dict[str, float]]:
        """Search, admit, widen and rank: the candidates, ranked, and the closeness each inherits from its history.

        ``trust_copies`` False: search Chroma, not the copies (their checks just found a change elsewhere)."""
        handle.refresh_indexes()
        handle.lexical.prepare()  # what was just written is folded in while the query is embedded and waits
        vector = None
        if not handle.wait_for_context(0):  # its context vectors are being made: embed the query meanwhile
            vector = embed_query(self._parts.embedder, request.query, self._parts.query_cache)
        handle.wait_for_context(_CONTEXT_WAIT_SECONDS)  # what this process just wrote ranks like the rest
        watch.lap("indexes")
        pool = candidates or max(50, request.top_k * 4)
        parsing = names_a_time(request.query)  # the date parser takes ms: then it runs meanwhile
        frames = recall_workers().submit(_frames, handle, request, now) if parsing else None
        search = self._search(handle, request, vector, pool, now, watch, trust_copies=trust_copies)
        inherited = inherit_from_history(handle, search.dense, search.vector, request.weights.context)
        admitted = self._admit(handle, search, list(dict.fromkeys([*search.dense, *search.context, *search.lexical])))
        admitted += self._widen(handle, search, pool, admitted)
        watch.lap("admit")
        ranked = rank(
            admitted,
            query=request.query,
            query_vector=search.vector,
            weights=request.weights,
            now=now,
            frames=frames.result() if frames is not None else _frames(handle, request, now),
            adjacent=handle.windows.adjacent,
        )
        watch.lap("rank")
        if not search.copies_were_current():  # another process wrote meanwhile: rank again from Chroma
            return self._ranked(handle, request, candidates, now, watch, trust_copies=False)
        watch.lap("currency")
        return search, admitted, ranked, inherited

    def _search(
        self,
        handle: NamespaceStore,
        request: RecallRequest,
        vector: list[float] | None,
        pool: int,
        now: datetime,
        watch: Stopwatch,
        *,
        trust_copies: bool,
    ) -> _Search:
        with_context = request.weights.context > 0 and handle.facts.any_context
        in_memory = handle.vector_copy is not None and handle.vector_copy.searchable  # small: BM25 after the embedding
        workers = recall_workers()
        lexical_side = (
            None if in_memory else workers.submit(lexical_candidates, handle, request.query, pool, with_context)
        )
        currency = handle.currency_checks() if trust_copies else None
        checks = [workers.submit(check) for check in currency or ()]  # verdict awaited after ranking
        vector = vector or embed_query(self._parts.embedder, request.query, self._parts.query_cache)
        watch.lap("embed")
        prefiltered = request.filters.narrows() or request.include_history
        where = request.filters.where(include_history=request.include_history, now=now) if prefiltered else None
        from_copy = currency is not None
        own = handle.vector_copy.cosines(vector) if from_copy and handle.vector_copy is not None else None
        framed = handle.context_copy.cosines(vector) if from_copy and with_context and handle.context_copy else None
        side_by_side = with_context and framed is None  # in memory, a search takes less than a thread hand-off
        context_side = workers.submit(handle.query_context, vector, n=pool) if side_by_side else None
        n = pool if prefiltered else 2 * pool
        dense = dict(own.nearest(n) if own is not None and where is None else handle.query(vector, n=n, where=where))
        context = dict(context_side.result()) if context_side is not None else {}
        if framed is not None:
            context = dict(framed.nearest(pool))
        lexical, lexical_vectors, lexical_context_vectors = (
            lexical_side.result()
            if lexical_side
            else lexical_candidates(handle, request.query, pool, with_context, gather_vectors=False)
        )
        watch.lap("search")
        return _Search(
            request, now, vector, prefiltered, with_context, from_copy, dense, context, lexical, lexical_vectors,
            lexical_context_vectors, own, framed, checks,
        )  # fmt: skip

    def _admit(
        self, handle: NamespaceStore, search: _Search, ids: list[str], trusted: set[str] | None = None
    ) -> list[Candidate]:
        """Candidates among ``ids`` that pass the filters, with the vectors their scores need."""
        if trusted is None:
            trusted = set(search.dense) if search.prefiltered else set()
        request = search.request
        kept = admissible(
            handle, ids, trusted, request.filters, include_history=request.include_history, now=search.now
        )
        dense, context, lexical = search.dense, search.context, search.lexical
        unscored = [i for i in kept if i not in dense]
        scored = search.own.of(unscored) if search.own is not None else {}
        vectors = _vectors(handle, [i for i in unscored if i not in scored], search.lexical_vectors, context=False)
        unframed = (
            [i for i, f in kept.items() if f.has_context_vector and i not in context] if search.with_context else []
        )
        framed = search.framed.of(unframed) if search.framed is not None else {}
        context_vectors = _vectors(
            handle, [i for i in unframed if i not in framed], search.lexical_context_vectors, context=True
        )
        return [  # in the order of Candidate's fields: ~150 a recall, made faster without their names
            Candidate(
                i,
                f,
                lexical.get(i, 0.0),
                dense.get(i, scored.get(i)),
                vectors.get(i),
                context.get(i, framed.get(i)),
                context_vectors.get(i),
            )
            for i, f in kept.items()
            if i in dense or i in scored or i in vectors
        ]

    def _widen(self, handle: NamespaceStore, search: _Search, pool: int, admitted: list[Candidate]) -> list[Candidate]:
        """Mostly working turns or history nearby: look further, and only then ask Chroma to filter.

        A ``where`` makes Chroma scan metadata (~50 ms at 10k memories, growing with the store)
        while an unfiltered search ``_WIDER`` times as deep costs a few ms, so that comes first;
        the filter is left for a neighbourhood that is history even that far out, and applied over
        the in-memory copy when recall may search it (``_nearest_admissible``).
        """
        if search.prefiltered or len(search.dense) < 2 * pool:
            return []
        ids = {c.id for c in admitted}
        if sum(i in ids for i in search.dense) >= pool // 2:
            return []
        wider = dict(search.nearest(handle, _WIDER * pool))
        farther = [i for i in wider if i not in search.dense and i not in ids]
        search.dense.update(wider)
        extra = self._admit(handle, search, farther)
        if len(extra) >= pool // 2 or len(wider) < _WIDER * pool:
            return extra
        ids |= {c.id for c in extra}
        if search.from_copy:
            return extra + self._nearest_admissible(handle, search, pool, ids)
        request = search.request
        where = request.filters.where(include_history=request.include_history, now=search.now)
        filtered = dict(handle.query(search.vector, n=pool, where=where))
        search.dense.update(filtered)
        return extra + self._admit(handle, search, [i for i in filtered if i not in ids], set(filtered))

    def _nearest_admissible(
        self, handle: NamespaceStore, search: _Search, pool: int, seen: set[str]
    ) -> list[Candidate]:
        """The ``pool`` nearest admissible memories, exactly: the copy ranked whole, admitted in that order.

        Chroma's filtered search walks its HNSW graph through the allowed records only, and
        when they are few (two current memories among 450 forgotten) it can miss one; over a
        copy small enough to search, every record is ranked and none is missed.
        """
        ranked = search.nearest(handle, EXACT_SEARCH_ROWS)
        rest = [(i, s) for i, s in ranked if i not in seen and i not in search.dense]
        found: list[Candidate] = []
        for start in range(0, len(rest), _WIDER * pool):
            chunk = dict(rest[start : start + _WIDER * pool])
            search.dense.update(chunk)
            found += self._admit(handle, search, list(chunk))
            if len(found) >= pool:
                break
        return found[:pool]

    @staticmethod
    def _fetch(
        handle: NamespaceStore, search: _Search, ranked: list[Ranked], wanted: int
    ) -> tuple[list[RecallHit], set[str]]:
        """Fetch the best ``wanted`` records, re-checking each against Chroma's current metadata; and the ids dropped.

        Ranking ran on cached facts; a finalist forgotten, expired or deleted by another
        process since then is dropped here and the next one takes its place. When the store found
        nothing changed elsewhere since its sync (``search.from_copy``), the records it holds in
        memory are Chroma's, and are read from there (``record_copy.py``).
        """
        request = search.request
        matches = request.filters.matcher(include_history=request.include_history, now=search.now)
        hits: list[RecallHit] = []
        dropped: set[str] = set()
        position = 0
        while len(hits) < wanted and position < len(ranked):
            batch = ranked[position : position + wanted - len(hits) + 2]
            position += len(batch)
            current = handle.flat_views([b.id for b in batch], from_copy=search.from_copy)
            for entry in batch:
                flat = current.get(entry.id)
                if flat is not None and matches(flat):
                    hits.append(entry.hit(handle.record_of(entry.id, flat)))
                else:
                    dropped.add(entry.id)
        return hits[:wanted], dropped

    def _pack(
        self, handle: NamespaceStore, request: RecallRequest, hits: list[RecallHit], now: datetime, *, touch: bool
    ) -> RecallResult:
        """Fit the budget in rank order, then put what announces a change above what it changes.

        Reordering only what was packed keeps the packed set the ranking chose: a change moved up
        never pushes another memory out of the budget.
        """
        counter = self._parts.tokens
        cosines = self._parts.cosines
        closeness, floor = closeness_by_vectors(handle.vectors, hits), (cosines.neighbours_rules + cosines.update) / 2
        changed = current_first(hits, closeness, floor=floor)[1]  # the marks' tokens count from the start
        packed = pack_within_budget(
            [h.record for h in hits], request.token_budget, query=request.query, counter=counter, changed=changed
        )
        texts = {h.record.id: text for h, (_, text) in zip(hits, packed)}
        hits = hits[: len(packed)]
        if changed:  # no change among all the hits is none among the packed ones: nothing to look at again
            hits, changed = current_first(hits, closeness, floor=floor)
        if touch and hits:
            handle.record_access([h.record.id for h in hits], now)
            hits = [h.model_copy(update={"record": _touched(h.record, now)}) for h in hits]
        context = format_context([(h.record, texts[h.record.id]) for h in hits], changed)
        return RecallResult(query=request.query, hits=hits, context=context, tokens=counter.count(context))


def _reranked(reranker: Reranker, request: RecallRequest, hits: list[RecallHit]) -> list[RecallHit]:
    """The best ``top_k`` after the second stage, each with the cross-encoder's logit (``rerank.py``)."""
    if not hits:
        return hits
    order = reranker.rerank(request.query, hits, [h.record.content for h in hits])[: request.top_k]
    return [hit.model_copy(update={"cross_encoder": logit}) for hit, logit in order]


def _frames(handle: NamespaceStore, request: RecallRequest, now: datetime) -> tuple[TimeFrame, ...]:
    """The times the question names, read against the store's latest date (``language/when.py``)."""
    if not request.weights.time_boost:
        return ()
    latest = from_epoch(handle.facts.latest_occurred)
    anchor = min(now, latest) if latest is not None else now
    return time_frames(request.query, anchor.astimezone(UTC).replace(tzinfo=None))


def _vectors(
    handle: NamespaceStore, ids: list[str], gathered: dict[str, Vector], *, context: bool
) -> dict[str, Vector]:
    """The vectors of ``ids``: those BM25's worker gathered, the rest from the store's copy (else Chroma)."""
    found = {i: gathered[i] for i in ids if i in gathered}
    return found | handle.vectors([i for i in ids if i not in found], context=context)


def _touched(record: MemoryRecord, now: datetime) -> MemoryRecord:
    return record.model_copy(update={"access_count": record.access_count + 1, "last_accessed_at": now})


__all__ = ["RecallRequest", "Recaller"]
