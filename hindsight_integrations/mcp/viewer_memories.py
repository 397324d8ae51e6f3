"""The viewer's pages and actions on memories: one function each, listed in ``ROUTES``.

The list (filtered and paged, or recall hits with their score parts when searching), a memory
with its provenance and history, its actions (forget, restore, review), the review queue, the
sessions and their working windows, and the export. Every page shows the signed-in namespace
only (``signed_in`` sends anyone else to the sign-in form) and counts against the viewer's
share of its rate limit; every action is a post checked for its origin and CSRF token first.
HTML lives in ``viewer_pages``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response

from ..core.errors import HindsightError, InvalidInputError, MemoryNotFoundError, StoreUnavailableError
from ..core.model.records import MemoryRecord, Status, Tier
from . import viewer_pages as pages
from .serving import HttpRoute
from .viewer_requests import Browser, Viewer
from .viewer_sessions import COOKIE, cross_origin

if TYPE_CHECKING:
    from ..core.engine import MemoryEngine

PAGE_SIZE = 50
FILTER_KEYS = ("q", "tier", "kind", "status", "since", "until", "min_importance")
EVERY_TIER = [t.value for t in Tier]
NOTICES = {
    "forgotten": "Forgotten: it is no longer recalled (Restore brings it back).",
    "restored": "Restored: it is active again.",
    "accepted": "Accepted: the memory is active and what it contradicted is history.",
    "rejected": "Rejected: the memory is forgotten.",
}

Page = Callable[[Viewer, Request, Browser, str], Awaitable[Response]]
"""A page of the signed-in namespace: the viewer, the request, who is asking and their namespace."""


def signed_in(page: Page) -> Callable[[Viewer, Request], Awaitable[Response]]:
    """``page`` for a signed-in browser (or anyone, without tokens), within the rate limit; else sign-in or 429."""

    async def handler(viewer: Viewer, request: Request) -> Response:
        who = await viewer.browser(request)
        if who.namespace is None:
            return viewer.to_sign_in()
        if (refused := viewer.over_rate_limit(who, who.namespace)) is not None:
            return refused
        return await page(viewer, request, who, who.namespace)

    handler.__name__ = handler.__qualname__ = page.__name__
    handler.__doc__ = page.__doc__
    return handler


def _parse_day(value: str | None, field: str, *, end: bool = False) -> datetime | None:
    """A ``YYYY-MM-DD`` form value as the start (or, for ``end``, the last moment) of that UTC day."""
    if not value:
        return None
    try:
        day = datetime.strptime(value, "%Y-%m-%d").replace(tzinfo=UTC)
    except ValueError:
        raise InvalidInputError(field, f"{value!r} is not a date (YYYY-MM-DD)") from None
    return day + timedelta(days=1, microseconds=-1) if end else day


def list_filters(params: Mapping[str, str | None]) -> dict[str, Any]:
    """The page's filter fields as ``RecallFilters`` data; the engine validates the values."""
    filters: dict[str, Any] = {"tiers": [params["tier"]] if params.get("tier") else EVERY_TIER}
    if params.get("kind"):
        filters["kinds"] = [params["kind"]]
    if params.get("status"):
        filters["statuses"] = [params["status"]]
    since, until = _parse_day(params.get("since"), "since"), _parse_day(params.get("until"), "until", end=True)
    if since:
        filters["since"] = since
    if until:
        filters["until"] = until
    if params.get("min_importance"):
        try:
            filters["min_importance"] = float(params["min_importance"] or "")
        except ValueError:
            raise InvalidInputError("min_importance", "must be a number between 0 and 1") from None
    return filters


def _get_or_none(engine: MemoryEngine, memory_id: str | None, namespace: str) -> MemoryRecord | None:
    """The memory ``memory_id`` of ``namespace``, or None when there is no id or no such memory."""
    if not memory_id:
        return None
    try:
        return engine.get(memory_id, namespace=namespace)
    except MemoryNotFoundError:
        return None


def _in_cold_storage(engine: MemoryEngine, record: MemoryRecord, namespace: str) -> bool:
    """Whether ``restore`` can bring the memory back: archived by upkeep into cold storage.

    A compressed conversation turn is archived too, but stays in the store: restore skips it.
    """
    return record.status is Status.ARCHIVED and record.id in engine.archived_ids(namespace=namespace)


def _every(engine: MemoryEngine, namespace: str, **filters: Any) -> list[MemoryRecord]:
    """Every memory of ``namespace`` of any tier that matches ``filters``, history included."""
    return engine.list(
        namespace=namespace, filters={"tiers": EVERY_TIER, **filters}, include_history=True, limit=10_000
    )


@signed_in
async def memory_list(viewer: Viewer, request: Request, who: Browser, namespace: str) -> Response:
    """The namespace's memories (filtered, paged), or recall hits with score parts when searching."""
    engine = viewer.engine
    params = {k: request.query_params.get(k) for k in FILTER_KEYS}
    try:
        filters = list_filters(params)
        if params.get("q"):
            result = await run_in_threadpool(
                engine.recall, params["q"] or "", namespace=namespace, filters=filters, touch=False, top_k=20
            )
            return viewer.show("Search", pages.search_results(result.hits, params), who)
        offset = max(0, int(request.query_params.get("offset") or 0))
        records = await run_in_threadpool(
            engine.list, namespace=namespace, filters=filters, include_history=True, limit=PAGE_SIZE + 1, offset=offset
        )
        stats = await run_in_threadpool(engine.stats, namespace=namespace)
    except (HindsightError, ValueError) as exc:
        if isinstance(exc, StoreUnavailableError):
            raise
        body = f'<p class="error box" id="error">{pages.esc(exc)}</p>{pages.filter_form(params)}'
        return viewer.show("Memories", body, who, status_code=400)
    body = pages.memory_list(
        records[:PAGE_SIZE], params, stats, offset=offset, limit=PAGE_SIZE, more=len(records) > PAGE_SIZE
    )
    return viewer.show("Memories", body, who)


@signed_in
async def memory_page(viewer: Viewer, request: Request, who: Browser, namespace: str) -> Response:
    """One memory with its provenance and history; 404 for an id the namespace does not hold."""
    engine = viewer.engine
    try:
        record = await run_in_threadpool(engine.get, request.path_params["memory_id"], namespace=namespace)
    except MemoryNotFoundError:
        return viewer.error("Not found", "No such memory here.", who, 404)
    except InvalidInputError as exc:  # an id no memory can have (too long, not UTF-8)
        return viewer.error("Error", exc, who, 400)

    def related() -> tuple[list[MemoryRecord], MemoryRecord | None, MemoryRecord | None, bool]:
        older = [
            r for r in _every(engine, namespace, statuses=[Status.SUPERSEDED.value]) if r.superseded_by == record.id
        ]
        return (
            older,
            _get_or_none(engine, record.superseded_by, namespace),
            _get_or_none(engine, record.conflicts_with, namespace),
            _in_cold_storage(engine, record, namespace),
        )

    older, newer, contradicted, in_cold_storage = await run_in_threadpool(related)
    body = pages.memory_detail(
        record,
        superseded=older,
        superseded_by=newer,
        conflicts_with=contradicted,
        csrf=viewer.csrf(who),
        message=NOTICES.get(request.query_params.get("done") or ""),
        in_cold_storage=in_cold_storage,
    )
    return viewer.show("Memory", body, who)


async def memory_action(viewer: Viewer, request: Request) -> Response:
    """Forget, restore (un-forget or bring back from cold storage), or review a quarantined memory.

    Only a post from this viewer's own page, with its CSRF token, is carried out (else 403).
    """
    if (problem := cross_origin(request)) is not None:
        return viewer.refuse(request, problem, signed_in=request.cookies.get(COOKIE) is not None)
    who = await viewer.browser(request)
    namespace = who.namespace
    if namespace is None:
        return viewer.to_sign_in()
    memory_id, action = request.path_params["memory_id"], request.path_params["action"]
    form = await request.form()
    if (refused := viewer.forged(request, who, form.get(pages.CSRF_FIELD))) is not None:
        return refused
    if (refused := viewer.over_rate_limit(who, namespace)) is not None:
        return refused
    try:
        done = await _carry_out(viewer.engine, memory_id, action, form, namespace)
    except MemoryNotFoundError:
        return viewer.error("Not found", "No such memory here.", who, 404)
    except StoreUnavailableError:
        raise
    except HindsightError as exc:
        return viewer.error("Error", exc, who, 400)
    if done is None:
        return viewer.error("Error", "Unknown action.", who, 400)
    return RedirectResponse(f"/ui/memory/{memory_id}?done={done}", status_code=303)


async def _carry_out(engine: MemoryEngine, memory_id: str, action: str, form: FormData, namespace: str) -> str | None:
    """Do ``action`` to the memory; what was done (a ``NOTICES`` key), or None for an action there is not."""
    record = await run_in_threadpool(engine.get, memory_id, namespace=namespace)
    if action == "forget":
        await run_in_threadpool(engine.forget, memory_id, namespace=namespace)
        return "forgotten"
    if action == "restore" and record.status is Status.ARCHIVED:
        if not await run_in_threadpool(engine.restore, namespace=namespace, ids=[memory_id]):
            raise InvalidInputError("id", f"memory {memory_id} is archived but not in cold storage: nothing restored")
        return "restored"
    if action == "restore":
        await run_in_threadpool(engine.unforget, memory_id, namespace=namespace)
        return "restored"
    if action == "review" and form.get("decision") in ("accept", "reject"):
        accept = form.get("decision") == "accept"
        await run_in_threadpool(engine.review, memory_id, accept=accept, namespace=namespace)
        return "accepted" if accept else "rejected"
    return None


@signed_in
async def review_page(viewer: Viewer, request: Request, who: Browser, namespace: str) -> Response:
    """Quarantined memories awaiting accept/reject, beside what each contradicts."""
    engine = viewer.engine

    def load() -> tuple[list[MemoryRecord], dict[str, MemoryRecord]]:
        held = _every(engine, namespace, statuses=[Status.QUARANTINED.value])
        others = {r.conflicts_with: _get_or_none(engine, r.conflicts_with, namespace) for r in held}
        return held, {k: v for k, v in others.items() if k and v is not None}

    held, contradicted = await run_in_threadpool(load)
    return viewer.show("Review", pages.review_list(held, contradicted, viewer.csrf(who)), who)


@signed_in
async def sessions_page(viewer: Viewer, request: Request, who: Browser, namespace: str) -> Response:
    """Sessions holding live working memory."""
    turns = await run_in_threadpool(
        viewer.engine.list, namespace=namespace, filters={"tiers": [Tier.WORKING.value]}, limit=10_000
    )
    counts = Counter(t.session_id for t in turns if t.session_id)
    return viewer.show("Sessions", pages.sessions_list(sorted(counts.items())), who)


@signed_in
async def session_page(viewer: Viewer, request: Request, who: Browser, namespace: str) -> Response:
    """A session's working window and its compression summaries."""
    engine = viewer.engine
    session_id = request.path_params["session_id"]

    def load() -> tuple[list[MemoryRecord], list[MemoryRecord]]:
        window = engine.working_window(session_id=session_id, namespace=namespace)
        summaries = _every(engine, namespace, session_id=session_id, kinds=["summary"])
        return window, sorted(summaries, key=lambda s: s.occurred_at)

    try:
        window, summaries = await run_in_threadpool(load)
    except StoreUnavailableError:
        raise
    except HindsightError as exc:
        return viewer.error("Error", exc, who, 400)
    return viewer.show("Session", pages.session_detail(session_id, window, summaries), who)


@signed_in
async def export(viewer: Viewer, request: Request, who: Browser, namespace: str) -> Response:
    """The namespace's export (every status, no vectors) as a JSON download."""
    data = await run_in_threadpool(viewer.engine.export, namespace=namespace, include_embeddings=False)
    return JSONResponse(
        data,
        headers={
            "Content-Disposition": f'attachment; filename="hindsight-{namespace}.json"',
            "Cache-Control": "no-store",
        },
    )


ROUTES: list[HttpRoute[Viewer]] = [
    HttpRoute("/ui", "GET", memory_list),
    HttpRoute("/ui/memory/{memory_id}", "GET", memory_page),
    HttpRoute("/ui/memory/{memory_id}/{action}", "POST", memory_action),
    HttpRoute("/ui/review", "GET", review_page),
    HttpRoute("/ui/sessions", "GET", sessions_page),
    HttpRoute("/ui/sessions/{session_id}", "GET", session_page),
    HttpRoute("/ui/export.json", "GET", export),
]


__all__ = ["EVERY_TIER", "FILTER_KEYS", "PAGE_SIZE", "ROUTES", "list_filters"]
