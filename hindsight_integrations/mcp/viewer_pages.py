"""HTML of the memory viewer (``viewer.py`` serves it): plain string templates, every value escaped.

Memory text is written by users and by models, so it may hold HTML or script; nothing goes
into a page except through ``esc`` (text and attribute values) or ``query_string`` (URLs).
Every form that changes something (sign-in, sign-out, forget, restore, review) carries the
request's CSRF token in a hidden ``csrf`` field (``csrf_field``), which ``viewer.py`` checks.
The page needs no build step and fetches nothing from elsewhere: the style sheet and the
little script are inline. Tables turn into stacked cards below 700 px so the page is usable
on a phone without horizontal scrolling.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from urllib.parse import quote, urlencode

from ..core.model.records import Kind, MemoryRecord, Status, Tier
from ..core.model.results import NamespaceStats, RecallHit
from ..core.recall.context import DISPLAY_CONTROL_ESCAPES

STYLE = """
*{box-sizing:border-box}
body{margin:0;font:15px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;color:#1d2430;background:#f6f7f9}
header{display:flex;flex-wrap:wrap;gap:.5rem 1.2rem;align-items:center;padding:.7rem 1rem;background:#24324a;color:#fff}
header a{color:#fff;text-decoration:none}header strong{font-size:1.1rem}
header form{margin-left:auto}
main{max-width:1200px;margin:0 auto;padding:1rem}
h1{font-size:1.3rem;margin:.2rem 0 .8rem}h2{font-size:1.1rem;margin:1.2rem 0 .5rem}
a{color:#1f5fbf}
.box{background:#fff;border:1px solid #dde1e7;border-radius:6px;padding:.8rem;margin-bottom:1rem}
form.filters{display:flex;flex-wrap:wrap;gap:.5rem .8rem;align-items:flex-end}
form.filters label{display:flex;flex-direction:column;font-size:.8rem;color:#4a5568}
input,select,button{font:inherit;padding:.3rem .45rem;border:1px solid #b8c0cc;border-radius:4px;max-width:100%}
button{background:#24324a;color:#fff;border-color:#24324a;cursor:pointer}
button.danger{background:#a12b2b;border-color:#a12b2b}button.plain{background:#fff;color:#24324a}
table{width:100%;border-collapse:collapse;background:#fff}
th,td{text-align:left;padding:.4rem .5rem;border-bottom:1px solid #e5e8ec;vertical-align:top}
th{font-size:.8rem;color:#4a5568;background:#eef1f5}
td.content,.content{overflow-wrap:anywhere;white-space:pre-wrap}
.badge{display:inline-block;padding:0 .4rem;border-radius:3px;font-size:.8rem;background:#e4e9f1}
.status-quarantined{background:#ffe2b3}.status-deleted{background:#f6caca}.status-superseded{background:#ddd}
.status-archived{background:#d9d2f0}.status-active{background:#cdeccd}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.2rem 1rem;margin:0}
dt{color:#4a5568}dd{margin:0;overflow-wrap:anywhere}
.actions{display:flex;flex-wrap:wrap;gap:.5rem}.actions form{margin:0}
.note{color:#4a5568;font-size:.9rem}.error{color:#a12b2b}
pre{white-space:pre-wrap;overflow-wrap:anywhere}
@media (max-width:700px){
 table,thead,tbody,tr,td{display:block;width:100%}thead{display:none}
 tr{border:1px solid #dde1e7;border-radius:6px;margin-bottom:.6rem;background:#fff}
 td{border:0;padding:.2rem .6rem}td[data-label]::before{content:attr(data-label) ": ";font-size:.8rem;color:#4a5568}
 main{padding:.6rem}form.filters label{flex:1 1 40%}
}
"""

SCRIPT = """
document.querySelectorAll('form.filters select').forEach(function (s) {
  s.addEventListener('change', function () { s.form.submit(); });
});
document.querySelectorAll('[data-local-time]').forEach(function (t) {
  var d = new Date(t.getAttribute('datetime'));
  if (!isNaN(d)) { t.title = d.toLocaleString(); }
});
"""


def esc(value: object) -> str:
    """``value`` as HTML text or a quoted attribute value (quotes escaped too)."""
    return html.escape("" if value is None else str(value), quote=True).translate(DISPLAY_CONTROL_ESCAPES)


def query_string(params: Mapping[str, str | None]) -> str:
    """``?a=1&b=2`` of the non-empty ``params`` (URL-encoded), or the empty string."""
    kept = {k: v for k, v in params.items() if v}
    return "?" + urlencode(kept) if kept else ""


def when(value: datetime | None) -> str:
    """A time as a ``<time>`` element (UTC, minutes), or a dash."""
    if value is None:
        return "—"
    return f'<time datetime="{esc(value.isoformat())}" data-local-time>{esc(value.strftime("%Y-%m-%d %H:%M"))}</time>'


def badge(status: Status) -> str:
    """A status as a coloured label."""
    return f'<span class="badge status-{esc(status.value)}">{esc(status.value)}</span>'


def memory_link(memory_id: str, label: str | None = None) -> str:
    """A link to a memory's page."""
    return f'<a href="/ui/memory/{quote(memory_id, safe="")}">{esc(label or memory_id[:8])}</a>'


CSRF_FIELD = "csrf"


def csrf_field(token: str) -> str:
    """The hidden form field that proves a post came from one of the viewer's own pages."""
    return f'<input type="hidden" name="{CSRF_FIELD}" value="{esc(token)}">'


def page(title: str, body: str, *, namespace: str | None, signed_in: bool, csrf: str = "") -> str:
    """A whole page: header (namespace, navigation, sign-out), ``body``, the inline style and script."""
    nav = ""
    if namespace is not None:
        sign_out = (
            f'<form method="post" action="/ui/signout">{csrf_field(csrf)}'
            '<button class="plain" id="sign-out">Sign out</button></form>'
            if signed_in
            else ""
        )
        nav = (
            f'<span>namespace <b id="namespace">{esc(namespace)}</b></span>'
            '<a href="/ui">Memories</a><a href="/ui/review">Review</a><a href="/ui/sessions">Sessions</a>'
            f'<a href="/ui/export.json" id="export">Export JSON</a>{sign_out}'
        )
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)} · Hindsight</title><style>{STYLE}</style></head><body>"
        f'<header><a href="/ui"><strong>Hindsight memory</strong></a>{nav}</header>'
        f"<main>{body}</main><script>{SCRIPT}</script></body></html>"
    )


def sign_in(csrf: str, error: str | None = None) -> str:
    """The token form: the token is posted once and exchanged for a session cookie, never put in a URL.

    ``csrf`` is bound to the browser's pre-session cookie, so a form on another site cannot
    sign this browser in to the attacker's namespace.
    """
    message = f'<p class="error" id="sign-in-error">{esc(error)}</p>' if error else ""
    body = (
        '<div class="box" style="max-width:28rem"><h1>Sign in</h1>'
        '<p class="note">Paste the bearer token your server gave you; it selects whose memories you see.</p>'
        f'{message}<form method="post" action="/ui/signin" id="sign-in">{csrf_field(csrf)}'
        '<p><label>Token<br><input type="password" name="token" id="token" autocomplete="off" required '
        'style="width:100%"></label></p><button type="submit">Sign in</button></form></div>'
    )
    return page("Sign in", body, namespace=None, signed_in=False)


def _options(name: str, values: Iterable[str], chosen: str | None) -> str:
    items = [f'<option value="">any {esc(name)}</option>']
    for value in values:
        selected = " selected" if value == chosen else ""
        items.append(f'<option value="{esc(value)}"{selected}>{esc(value)}</option>')
    return f'<select name="{esc(name)}" id="filter-{esc(name)}">{"".join(items)}</select>'


def filter_form(params: Mapping[str, str | None]) -> str:
    """Search box and filters (tier, kind, status, time range, minimum importance) as one GET form."""
    return (
        '<form class="filters box" method="get" action="/ui" id="filters">'
        f'<label>Search (recall)<input type="search" name="q" id="q" value="{esc(params.get("q"))}"></label>'
        f"<label>Tier{_options('tier', [t.value for t in Tier], params.get('tier'))}</label>"
        f"<label>Kind{_options('kind', [k.value for k in Kind], params.get('kind'))}</label>"
        f"<label>Status{_options('status', [s.value for s in Status], params.get('status'))}</label>"
        f'<label>From<input type="date" name="since" id="since" value="{esc(params.get("since"))}"></label>'
        f'<label>Until<input type="date" name="until" id="until" value="{esc(params.get("until"))}"></label>'
        '<label>Min importance<input type="number" name="min_importance" id="min_importance" min="0" max="1" '
        f'step="0.05" value="{esc(params.get("min_importance"))}"></label>'
        '<button type="submit" id="apply">Apply</button> <a href="/ui">clear</a></form>'
    )


def memory_rows(records: Sequence[MemoryRecord]) -> str:
    """The memories as table rows (one ``tr.memory`` each, labelled cells for the phone layout)."""
    rows = []
    for r in records:
        rows.append(
            f'<tr class="memory" data-id="{esc(r.id)}">'
            f'<td class="content" data-label="Memory">{esc(r.content)}</td>'
            f'<td data-label="Tier">{esc(r.tier.value)}</td><td data-label="Kind">{esc(r.kind.value)}</td>'
            f'<td data-label="Status">{badge(r.status)}</td>'
            f'<td data-label="Importance">{r.importance:.2f}</td>'
            f'<td data-label="Occurred">{when(r.occurred_at)}</td>'
            f'<td data-label="Last access">{when(r.last_accessed_at)}</td>'
            f'<td data-label="Accesses">{r.access_count}</td>'
            f'<td data-label="Open">{memory_link(r.id, "open")}</td></tr>'
        )
    return "".join(rows)


MEMORY_HEADINGS = (
    "<thead><tr><th>Memory</th><th>Tier</th><th>Kind</th><th>Status</th><th>Importance</th>"
    "<th>Occurred</th><th>Last access</th><th>Accesses</th><th></th></tr></thead>"
)


def memory_list(
    records: Sequence[MemoryRecord],
    params: Mapping[str, str | None],
    stats: NamespaceStats,
    *,
    offset: int,
    limit: int,
    more: bool,
) -> str:
    """The list page's body: totals, filters, one page of memories and paging links."""
    totals = ", ".join(f"{esc(k)} {v}" for k, v in sorted(stats.by_status.items()))
    paging = []
    if offset > 0:
        paging.append(f'<a href="/ui{query_string({**params, "offset": str(max(0, offset - limit))})}">newer</a>')
    if more:
        paging.append(f'<a href="/ui{query_string({**params, "offset": str(offset + limit)})}" id="older">older</a>')
    table = (
        f'<table id="memories">{MEMORY_HEADINGS}<tbody>{memory_rows(records)}</tbody></table>'
        if records
        else '<p class="note" id="empty">No memory matches.</p>'
    )
    return (
        f'<h1>Memories</h1><p class="note" id="totals">{stats.total} in all: {totals or "none"}</p>'
        f"{filter_form(params)}{table}<p>{' · '.join(paging)}</p>"
    )


def search_results(hits: Sequence[RecallHit], params: Mapping[str, str | None]) -> str:
    """Recall hits with every part of their score (what ranked them)."""
    rows = []
    for h in hits:
        r = h.record
        rows.append(
            f'<tr class="hit" data-id="{esc(r.id)}">'
            f'<td class="content" data-label="Memory">{esc(r.content)}</td>'
            f'<td data-label="Status">{badge(r.status)}</td>'
            f'<td data-label="Score" class="score">{h.score:.3f}</td>'
            f'<td data-label="Relevance">{h.relevance:.3f}</td><td data-label="Similarity">{h.similarity:.3f}</td>'
            f'<td data-label="Lexical">{h.lexical:.3f}</td><td data-label="Recency">{h.recency:.3f}</td>'
            f'<td data-label="Importance">{r.importance:.2f}</td>'
            f'<td data-label="Open">{memory_link(r.id, "open")}</td></tr>'
        )
    table = (
        '<table id="hits"><thead><tr><th>Memory</th><th>Status</th><th>Score</th><th>Relevance</th>'
        "<th>Similarity</th><th>Lexical</th><th>Recency</th><th>Importance</th><th></th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
        if rows
        else '<p class="note" id="empty">Recall found nothing for this question.</p>'
    )
    return f"<h1>Search: “{esc(params.get('q'))}”</h1>{filter_form(params)}{table}"


def _action(path: str, label: str, button_id: str, csrf: str, *, danger: bool = False, value: str | None = None) -> str:
    hidden = f'<input type="hidden" name="decision" value="{esc(value)}">' if value else ""
    css = ' class="danger"' if danger else ""
    button = f'<button{css} id="{esc(button_id)}">{esc(label)}</button>'
    return f'<form method="post" action="{esc(path)}">{csrf_field(csrf)}{hidden}{button}</form>'


def memory_actions(record: MemoryRecord, csrf: str, *, in_cold_storage: bool = False) -> str:
    """What can be done to the memory in its status: review, forget, or restore (if forgotten, or in cold storage)."""
    base = f"/ui/memory/{quote(record.id, safe='')}"
    buttons = []
    if record.status is Status.QUARANTINED:
        buttons.append(_action(f"{base}/review", "Accept", "accept", csrf, value="accept"))
        buttons.append(_action(f"{base}/review", "Reject", "reject", csrf, danger=True, value="reject"))
    elif record.status is Status.DELETED:
        buttons.append(_action(f"{base}/restore", "Restore", "restore", csrf))
    elif record.status is Status.ARCHIVED and in_cold_storage:
        buttons.append(_action(f"{base}/restore", "Restore from cold storage", "restore", csrf))
    elif record.status is Status.ARCHIVED:
        return archived_in_place(record)
    if record.status in (Status.ACTIVE, Status.SUPERSEDED):
        buttons.append(_action(f"{base}/forget", "Forget", "forget", csrf, danger=True))
    return f'<div class="actions box">{"".join(buttons)}</div>' if buttons else ""


def archived_in_place(record: MemoryRecord) -> str:
    """Why an archived memory the store still holds (a compressed turn) offers no restore, and what stands for it."""
    summary = record.metadata.get("summary_id")
    into = f"into {memory_link(str(summary), 'its summary')}, which stands for it" if summary else "out of its window"
    return (
        f'<p class="note box" id="archived-in-place">Compressed {into}. It is kept as the record of what '
        "was said, not in cold storage: there is nothing to restore.</p>"
    )


def memory_detail(
    record: MemoryRecord,
    *,
    superseded: Sequence[MemoryRecord],
    superseded_by: MemoryRecord | None,
    conflicts_with: MemoryRecord | None,
    csrf: str,
    message: str | None = None,
    in_cold_storage: bool = False,
) -> str:
    """One memory: every field, its provenance and its history, and the actions its status allows."""
    fields = [
        ("Status", badge(record.status)),
        ("Tier", esc(record.tier.value)),
        ("Kind", esc(record.kind.value)),
        ("Role", esc(record.role.value)),
        ("Importance", f"{record.importance:.2f}"),
        ("Occurred", when(record.occurred_at)),
        ("Created", when(record.created_at)),
        ("Updated", when(record.updated_at)),
        ("Valid", f"{when(record.valid_from)} → {when(record.valid_until)}"),
        ("Expires", when(record.expires_at)),
        ("Last access", when(record.last_accessed_at)),
        ("Accesses", str(record.access_count)),
        ("Session", esc(record.session_id or "—")),
        ("Slot", esc(record.slot or "—")),
        ("Entities", esc(", ".join(record.entities) or "—")),
        ("Id", f"<code>{esc(record.id)}</code>"),
    ]
    src = record.source
    provenance = [
        ("Origin", esc(src.origin or "—")),
        ("Session", esc(src.session_id or "—")),
        ("Source turns", esc(", ".join(src.message_ids) or "—")),
        ("Source memories", ", ".join(memory_link(m) for m in src.memory_ids) or "—"),
    ]
    merged = "".join(
        f'<li class="merged content">{esc(s.get("content", s))}'
        f"{' · ' + esc(s.get('occurred_at')) if isinstance(s, dict) and s.get('occurred_at') else ''}</li>"
        for s in record.sources
    )
    history = []
    if superseded_by is not None:
        history.append(
            f'<li id="superseded-by">Superseded by {memory_link(superseded_by.id)}: '
            f'<span class="content">{esc(superseded_by.content)}</span></li>'
        )
    for old in superseded:
        history.append(
            f'<li class="supersedes">Superseded {memory_link(old.id)}: '
            f'<span class="content">{esc(old.content)}</span></li>'
        )
    if conflicts_with is not None:
        history.append(
            f'<li id="conflicts-with">Contradicts {memory_link(conflicts_with.id)} '
            f"({esc(conflicts_with.status.value)}): "
            f'<span class="content">{esc(conflicts_with.content)}</span></li>'
        )
    notice = f'<p class="box" id="message">{esc(message)}</p>' if message else ""
    return (
        f'{notice}<h1>Memory</h1><div class="box"><p class="content" id="memory-content">{esc(record.content)}</p>'
        f"{_definitions(fields)}</div>{memory_actions(record, csrf, in_cold_storage=in_cold_storage)}"
        f'<h2>Provenance</h2><div class="box" id="provenance">{_definitions(provenance)}'
        f"{'<h3>Merged inputs</h3><ul>' + merged + '</ul>' if merged else ''}</div>"
        f'<h2>History</h2><div class="box" id="history">'
        f"{'<ul>' + ''.join(history) + '</ul>' if history else '<p class=note>No other version.</p>'}</div>"
        f'<h2>Metadata</h2><pre class="box">{esc(record.metadata or {})}</pre>'
    )


def _definitions(items: Sequence[tuple[str, str]]) -> str:
    """``(label, html)`` pairs as a definition list; the html parts are already escaped."""
    return "<dl>" + "".join(f"<dt>{esc(k)}</dt><dd>{v}</dd>" for k, v in items) + "</dl>"


def review_list(records: Sequence[MemoryRecord], contradicted: Mapping[str, MemoryRecord], csrf: str) -> str:
    """Quarantined memories, each beside what it contradicts, with accept and reject buttons."""
    if not records:
        return '<h1>Review</h1><p class="note" id="empty">Nothing waits for review.</p>'
    items = []
    for r in records:
        other = contradicted.get(r.conflicts_with or "")
        against = (
            f'<p class="note">Contradicts {memory_link(other.id)}: '
            f'<span class="content">{esc(other.content)}</span></p>'
            if other
            else ""
        )
        items.append(
            f'<div class="box quarantined" data-id="{esc(r.id)}"><p class="content">{esc(r.content)}</p>{against}'
            f"{memory_actions(r, csrf)}</div>"
        )
    return "<h1>Review</h1><p class=note>Low-trust contradictions of important memories wait here.</p>" + "".join(items)


def sessions_list(sessions: Sequence[tuple[str, int]]) -> str:
    """Sessions with live working memory, and how many turns each holds."""
    if not sessions:
        return '<h1>Sessions</h1><p class="note" id="empty">No session has working memory.</p>'
    rows = "".join(
        f'<li><a href="/ui/sessions/{quote(sid, safe="")}">{esc(sid)}</a> · {count} live turns</li>'
        for sid, count in sessions
    )
    return f'<h1>Sessions</h1><ul class="box" id="sessions">{rows}</ul>'


def session_detail(session_id: str, window: Sequence[MemoryRecord], summaries: Sequence[MemoryRecord]) -> str:
    """A session's working window (oldest first) and the summaries compression folded older turns into."""
    turns = "".join(
        f'<tr class="turn"><td data-label="Role">{esc(t.role.value)}</td>'
        f'<td class="content" data-label="Turn">{esc(t.content)}</td>'
        f'<td data-label="Tokens">{t.token_count}</td><td data-label="When">{when(t.occurred_at)}</td></tr>'
        for t in window
    )
    folded = "".join(
        f'<div class="box summary"><p class="content">{esc(s.content)}</p>'
        f'<p class="note">replaced {len(s.source.message_ids)} turns · {when(s.occurred_at)} · '
        f"{memory_link(s.id)}</p></div>"
        for s in summaries
    )
    return (
        f"<h1>Session {esc(session_id)}</h1><h2>Working window</h2>"
        + (
            '<table id="window"><thead><tr><th>Role</th><th>Turn</th><th>Tokens</th><th>When</th></tr></thead>'
            f"<tbody>{turns}</tbody></table>"
            if turns
            else '<p class="note">No live turn.</p>'
        )
        + "<h2>Compression summaries</h2>"
        + (folded or '<p class="note" id="no-summaries">No turn has been compressed yet.</p>')
    )


def refused(reason: str, *, signed_in: bool) -> str:
    """The page of a post the viewer refused (403): what was wrong, that nothing changed, what to do."""
    body = (
        '<div class="box" style="max-width:40rem" id="refused"><h1>Request refused</h1>'
        f'<p class="error" id="refused-reason">{esc(reason)}</p>'
        "<p>Nothing was changed. If you clicked a button in this viewer, go back, reload the page and try "
        "again; if another web page sent you here, it tried to act in your name.</p>"
        f'<p><a href="{"/ui" if signed_in else "/ui/signin"}">Back to the viewer</a></p></div>'
    )
    return page("Refused", body, namespace=None, signed_in=False)


def throttled(seconds: str, csrf: str) -> str:
    """The sign-in form of a client that failed too often: it may try again in ``seconds``."""
    return sign_in(csrf, f"Too many failed sign-ins from your address: try again in {seconds} seconds.")


__all__ = [
    "CSRF_FIELD",
    "csrf_field",
    "esc",
    "memory_detail",
    "memory_list",
    "page",
    "query_string",
    "refused",
    "review_list",
    "search_results",
    "session_detail",
    "sessions_list",
    "sign_in",
    "throttled",
]
