"""A forgotten text leaves the context of the memories said after it.

A memory written in a conversation keeps the session's preceding texts as its ``context``
(``conversation.py``, ``WorkingMemory.record_turn``): stored in its record, indexed by BM25 and
embedded into its context vector. So the memories said after one that is forgotten held its
text: readable in their records (get, dump, export) and found through their context vectors
by a question about it. Forgetting (``Editor.forget``, a rejected review) and clearing a
session's window (``WorkingMemory.clear``) therefore rewrite every stored context of the same
sessions that holds the text (the records', every status, and their merged repeats' in
``sources``), and embed those records' context vectors again as the write path does
(``EngineParts.embed_context``). Archived copies in cold storage are rewritten too, without
their context vector, which ``restore`` embeds again.

The sessions a memory was said in are its own and those its merged repeats were said in (a
repeat said in another session carries that session's texts). A repeat said in one of them may
also be kept by a memory of another session, in its ``sources`` with its context: those memories
are cleaned too, found through the facts index (``FactsIndex.merged_from``) rather than by
reading the whole namespace.

A forgotten memory's text also leaves the session's live working window: the turns it was
made from (its ``source.message_ids``: a turn's own memory, or each memory an LLM extracted from
it) and the turns that say its very text are forgotten with it. The window is what the adapters
show the model as the conversation so far, and what the next turn's memory takes its context
from (``WorkingMemory.record_turn``), so a turn left in it would bring the text back at once.
The memory's other memories extracted from the same turn stay; the turn goes with the text.

A turn that said the text among more ("Quick note. My PIN is 4417. Keep it safe.") keeps the
rest: the text leaves it where it is whole sentences of the line (``without_sentences``), the turn
is embedded again, and a summary that told it is told again; a line left with nothing goes.
Contexts lose such a sentence too, whoever's line it was in. Only texts worth a memory
(``admission.assess``) are looked for inside longer lines: small talk ("Yes.") said inside
someone's longer line is that line's own.

A text still held by a long-term memory of the session that stays (the memory a cleared turn
was remembered as, a second copy of a forgotten one) is no secret the contexts keep: they keep it,
and the turns saying it stay in the window. The forgotten memory's own record keeps its text, as a
soft delete does; ``unforget`` brings the memory back, not the turns nor the contexts it left.
The copies upkeep made of the text are ``forgotten_copies.py``'s; a summary forgotten with the
text is deleted for good, as they are, so that no record left holds the words.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from datetime import datetime
from typing import Any

import numpy as np

from ..model.records import Kind, MemoryRecord, Status, Tier, merged_inputs
from ..parts import EngineParts
from ..storage.cold import ColdStorage
from ..storage.namespace_store import NamespaceStore
from ..storage.session_windows import context_line, remembered_text
from ..upkeep.provenance import turn_ids
from ..working.compression import SUMMARY_ID_KEY
from .admission import assess
from .conversation import NEIGHBOUR_CHARS
from .forgotten_archive import ArchivedCopies
from .forgotten_copies import ConsolidatedMembers, absorbed_originals, summaries_without

_TOLD = frozenset({Status.ACTIVE, Status.ARCHIVED})  # a turn live in the window, or compressed into a summary
_SENTENCE_ENDS = ".!?…"
_WIDE_SENTENCE_ENDS = "。！？"
_STARTS_AFTER = frozenset(_SENTENCE_ENDS + _WIDE_SENTENCE_ENDS + ":：")  # a sentence said after one of these starts


def spoken_forms(record: MemoryRecord) -> set[str]:
    """How ``record``'s text reads inside a later memory's context.

    A turn reads as its window line ("Caroline: ...", ``session_windows.context_line``); a
    memory as the settler noted it (``conversation.py``) and, if it is a turn's remembered text
    ("Caroline: ...", ``remembered_text``), as that turn's line too: the two differ past
    ``NEIGHBOUR_CHARS``.
    """
    return _forms(record.content, record.entities, working=record.tier is Tier.WORKING)


def _forms(content: str, entities: Sequence[str], *, working: bool) -> set[str]:
    speaker = entities[0] if entities else None
    if working:
        forms = {context_line(content, speaker)}
    else:
        forms = {content.strip()[:NEIGHBOUR_CHARS]}
        if speaker and content.startswith(prefix := f"{speaker}: "):
            forms.add(context_line(content[len(prefix) :], speaker))
    return {form for form in forms if form}


def said_forms(record: MemoryRecord) -> set[str]:
    """``spoken_forms`` of ``record`` and of every repeat merged into it: each was said, in its own session."""
    forms = spoken_forms(record)
    for entry in merged_inputs(record.sources):
        content, entities = entry.get("content"), entry.get("entities") or []
        if isinstance(content, str) and isinstance(entities, list):
            forms |= _forms(content, [str(e) for e in entities], working=record.tier is Tier.WORKING)
    return forms


def said_in(records: Sequence[MemoryRecord]) -> set[str]:
    """The sessions ``records`` were said in: their own, and those of the repeats merged into them."""
    return {
        session
        for record in records
        for session in (record.session_id, *(entry.get("session_id") for entry in merged_inputs(record.sources)))
        if isinstance(session, str) and session
    }


def without_forms(context: str, forms: Collection[str]) -> str | None:
    """``context`` without each of ``forms`` that stands whole in it (between spaces or at an end); None if empty.

    A context is its texts joined by spaces, so each of them stands whole in it. A form glued to
    other characters ("Yes" in "Yes, twice a week") is part of another text, and stays; one that
    stands whole inside another text goes with it, erring on the side of forgetting.
    """
    cleaned = context
    for form in sorted(forms, key=len, reverse=True):
        if form in cleaned:
            cleaned = re.sub(rf"(?<!\S){re.escape(form)}(?!\S)\s*", "", cleaned)
    return context if cleaned == context else cleaned.strip() or None


def without_sentences(text: str, sentences: Collection[str]) -> str | None:
    """``text`` without each of ``sentences`` where it is whole sentences of it; None when nothing else is left.

    A text forgotten may have been said inside a longer line ("Quick note. My PIN is 4417. Keep it
    safe.", "Ana: Again: my PIN is 4417."): there it starts the line or follows a sentence's end or
    a colon, and ends a sentence itself. Only such an occurrence goes; the same words inside a
    sentence of another ("... my PIN is 4417 and ...") are part of that other text, and stay.
    """
    cleaned = text
    for sentence in sorted(sentences, key=len, reverse=True):
        if sentence in cleaned:
            cleaned = _without_sentence(cleaned, sentence)
    if cleaned == text:
        return text
    cleaned = cleaned.strip()
    return cleaned if any(character.isalnum() for character in cleaned) else None


def _without_sentence(text: str, sentence: str) -> str:
    """``text`` without each occurrence of ``sentence`` that is whole sentences of it, with the spaces before it.

    Each occurrence is found by its words, then the spaces before it are read back once to see
    whether a sentence starts there. A pattern starting at every line start and reading the
    spaces ahead read a run of blank lines again from each of its lines: quadratic, seconds for a
    text of many newlines, under the namespace's write lock.
    """
    occurrence = _sentence_pattern(sentence)
    kept: list[str] = []
    done = searched = 0
    while (found := occurrence.search(text, searched)) is not None:
        start = _sentence_start(text, found.start())
        if start is None:
            searched = found.start() + 1
            continue
        kept.append(text[done:start])
        done = searched = found.end()
    kept.append(text[done:])
    return "".join(kept)


def _sentence_start(text: str, words: int) -> int | None:
    """Where the sentence said at ``words`` starts, spaces before it included; None if it starts no sentence there.

    A sentence starts the text or a line, or follows a sentence's end or a colon. The spaces
    before it go with it: all of them after a sentence's end, else those after their first line break.
    """
    start = words
    while start > 0 and text[start - 1].isspace():
        start -= 1
    if start == 0 or text[start - 1] in _STARTS_AFTER:
        return start
    line = text.find("\n", start, words)
    return None if line == -1 else line + 1


def _sentence_pattern(sentence: str) -> re.Pattern[str]:
    """``sentence`` where it ends a sentence: at a sentence's end, its own or the one right after it."""
    if sentence[-1] in _WIDE_SENTENCE_ENDS:
        ends = ""  # a Chinese or Japanese sentence end: the next one follows without a space
    elif sentence[-1] in _SENTENCE_ENDS:
        ends = r"(?!\S)"
    else:
        ends = rf"(?:[{_SENTENCE_ENDS}](?!\S)|[{_WIDE_SENTENCE_ENDS}]|(?!\S))"
    return re.compile(re.escape(sentence) + ends)


class ForgottenText:
    """Takes forgotten memories' texts out of the stored contexts of their sessions, for one lane's namespaces."""

    def __init__(self, parts: EngineParts, cold: ColdStorage | None = None) -> None:
        self._parts = parts
        self._archive = ArchivedCopies(parts, cold)
        self._members = ConsolidatedMembers(parts, self._archive)

    def leave_contexts(self, handle: NamespaceStore, forgotten: Sequence[MemoryRecord]) -> list[MemoryRecord]:
        """Forget the live turns holding ``forgotten``'s text; rewrite the records (and cold rows) whose context does.

        ``forgotten`` are already written as deleted; the caller holds ``handle.writing``, so no
        write of the session lands between the read and the rewrite. Returns the records rewritten:
        what upkeep made of them (``forgotten_copies.py``: the members of a consolidated memory and
        the originals merged into them, forgotten too, and the consolidated memories they were
        members of), the turns forgotten, the records
        whose context changed, then the summaries told again without those turns or forgotten. The
        copies forgotten are returned marked deleted, though deleted for good.
        """
        now = self._parts.clock.now()
        members = self._members.forgotten_with(handle, forgotten, now)
        absorbed = absorbed_originals(handle, [*forgotten, *members], now)
        handle.delete([record.id for record in absorbed])
        consolidated = self._members.leave(handle, forgotten, now)
        gone = [*forgotten, *members, *absorbed]
        return [*members, *absorbed, *consolidated, *self._leave_contexts(handle, gone)]

    def _leave_contexts(self, handle: NamespaceStore, forgotten: Sequence[MemoryRecord]) -> list[MemoryRecord]:
        sessions = said_in(forgotten)
        if not sessions:
            return []
        stored = self._said_in(handle, sessions)
        gone = {r.id for r in forgotten} | {e.get("memory_id") for r in forgotten for e in merged_inputs(r.sources)}
        staying = [r for r in stored if r.id not in gone and _keeps_its_text(r)]
        kept = {form for r in staying for form in said_forms(r)}
        said = {form for r in forgotten for form in said_forms(r)}
        sentences = _sentences(forgotten, {text for r in staying for text in _texts(r)})
        turns = _turns_saying(stored, forgotten, said, kept)
        now = self._parts.clock.now()
        whole = {r.id for r in [*forgotten, *turns]}
        shortened, emptied = self._turns_without(stored, whole, sentences, now)
        turns.extend(emptied)
        forms = {form for form in said if not _held(form, kept)} | {form for t in turns for form in spoken_forms(t)}
        if not forms and not sentences:
            return []
        dropped = [t.model_copy(update={"status": Status.DELETED, "updated_at": now}) for t in turns]
        changed = [c for r in stored if (c := _without(r, forms, sentences, now)) is not None]
        if dropped or changed:
            handle.rewrite([*dropped, *changed], None, self._parts.embed_context(changed))
        if shortened:
            handle.rewrite(shortened, self._turn_vectors(shortened))
        removed = {t.id for t in dropped} | {r.id for r in forgotten if r.tier is Tier.WORKING}
        archived = self._archive.summaries_telling(handle.name, removed | {t.id for t in shortened})
        retold, untold = summaries_without([*stored, *archived], removed, now, shortened)
        in_cold = {summary.id for summary in archived}
        self._archive.rewrite(handle.name, [s for s in retold if s.id in in_cold], retold=True)
        self._archive.forget(handle.name, [s for s in untold if s.id in in_cold])
        if live_retold := [s for s in retold if s.id not in in_cold]:
            handle.rewrite(live_retold, *self._parts.embed_records(live_retold))
        handle.delete([s.id for s in untold if s.id not in in_cold])
        gone_summaries = {r.id for r in [*forgotten, *untold] if r.kind is Kind.SUMMARY}
        unlinked = _unlinked(stored, gone_summaries, removed, now)
        if unlinked:
            handle.rewrite(unlinked)
        self._leave_cold(handle.name, sessions, forms, sentences, now)
        return [*dropped, *shortened, *changed, *retold, *untold, *unlinked]

    def _turns_without(
        self, stored: Sequence[MemoryRecord], gone: set[str], sentences: set[str], now: datetime
    ) -> tuple[list[MemoryRecord], list[MemoryRecord]]:
        """The told turns that say one of ``sentences`` inside a longer line, written without it; those it filled.

        The window shows the rest of what the turn said, and the summary telling a compressed one
        tells it again; the turn is embedded again as ``record_turn`` embeds it (its remembered text).
        """
        shortened: list[MemoryRecord] = []
        emptied: list[MemoryRecord] = []
        for turn in stored:
            if turn.tier is not Tier.WORKING or turn.status not in _TOLD or turn.id in gone:
                continue
            content = without_sentences(turn.content, sentences)
            if content is None:
                emptied.append(turn)
            elif content != turn.content:
                update = {"content": content, "token_count": self._parts.tokens.count(content), "updated_at": now}
                shortened.append(turn.model_copy(update=update))
        return shortened, emptied

    def _turn_vectors(self, turns: Sequence[MemoryRecord]) -> np.ndarray:
        """The turns' vectors as ``record_turn`` embeds them: of their remembered text ("Speaker: text")."""
        indexed = [turn.model_copy(update={"content": remembered_text(turn)}) for turn in turns]
        return self._parts.embed_records(indexed, with_context=False)[0]

    @staticmethod
    def _said_in(handle: NamespaceStore, sessions: set[str]) -> list[MemoryRecord]:
        """The records of ``sessions``, then those of other sessions holding a repeat said in one of them.

        A repeat's context is its session's preceding texts. The facts index names the memories
        holding such repeats (``FactsIndex.merged_from``), caught up first with other writers: a
        forget reads its sessions and those memories, never the whole namespace.
        """
        stored = [record for session in sorted(sessions) for record in handle.find({"session_id": session})]
        handle.sync_indexes(force=True)
        read = {r.id for r in stored}
        elsewhere = sorted(handle.facts.merged_from(sessions) - read)
        return [*stored, *(record for record, _ in handle.get(elsewhere))]

    def _leave_cold(
        self, namespace: str, sessions: set[str], forms: set[str], sentences: set[str], now: datetime
    ) -> None:
        """The archived records of ``sessions`` (or holding a repeat said in one) whose contexts hold the texts."""
        changed = []
        for record in self._archive.saying(namespace, forms | sentences):
            merged = (entry.get("session_id") for entry in merged_inputs(record.sources))
            said_here = record.session_id in sessions or not sessions.isdisjoint(merged)
            if said_here and (cleaned := _without(record, forms, sentences, now)) is not None:
                changed.append(cleaned)
        self._archive.rewrite(namespace, changed)


def _turns_saying(
    stored: Sequence[MemoryRecord], forgotten: Sequence[MemoryRecord], said: set[str], kept: set[str]
) -> list[MemoryRecord]:
    """The turns of ``stored`` a forgotten memory was made from or that say its text; not one a memory keeps.

    Live turns and compressed ones (archived, told by a summary: ``forgotten_copies.py``). A turn
    says the text as its window line ("Ana: ...") or, for a memory stored without the speaker's
    name, as its bare words.
    """
    made_from = set(turn_ids(forgotten))
    gone = {r.id for r in forgotten}
    found = []
    for turn in stored:
        if turn.tier is not Tier.WORKING or turn.status not in _TOLD or turn.id in gone:
            continue
        line = spoken_forms(turn)
        says_it = turn.id in made_from or not (line | {context_line(turn.content, None)}).isdisjoint(said)
        if says_it and not any(_held(form, kept) for form in line):
            found.append(turn)
    return found


def _unlinked(
    stored: Sequence[MemoryRecord], summaries: set[str], removed: set[str], now: datetime
) -> list[MemoryRecord]:
    """The compressed turns that stay, no longer linked (``metadata.summary_id``) to a summary now forgotten.

    A summary is forgotten by the user, or when the turns left tell nothing worth one: its turns
    are then archived without a summary, as compression archives a group it makes none of, and the
    viewer no longer points from them to a summary that was forgotten.
    """
    return [
        turn.model_copy(
            update={"metadata": {k: v for k, v in turn.metadata.items() if k != SUMMARY_ID_KEY}, "updated_at": now}
        )
        for turn in stored
        if turn.tier is Tier.WORKING
        and turn.status is not Status.DELETED
        and turn.id not in removed
        and turn.metadata.get(SUMMARY_ID_KEY) in summaries
    ]


def _texts(record: MemoryRecord) -> set[str]:
    """What ``record`` and its merged repeats say, whole and without a leading "Speaker: " (``remembered_text``)."""
    texts = set()
    for content, entities in (
        (record.content, record.entities),
        *((e.get("content"), e.get("entities") or []) for e in merged_inputs(record.sources)),
    ):
        if not isinstance(content, str):
            continue
        speaker = entities[0] if isinstance(entities, list) and entities else None
        prefix = f"{speaker}: "
        text = content.strip()
        texts.add(text[len(prefix) :].strip() if speaker and text.startswith(prefix) else text)
    return {text for text in texts if text}


def _sentences(forgotten: Sequence[MemoryRecord], kept: set[str]) -> set[str]:
    """The forgotten texts looked for inside longer lines: those worth a memory, that no memory staying says.

    Small talk ("Yes.", "Sounds good.") is left to whole lines: said inside another's line, it
    is that line's own, and taking it out would change what someone else said.
    """
    return {
        text
        for record in forgotten
        for text in _texts(record)
        if assess(text, record.role).remember and not any(text in k for k in kept)
    }


def _held(form: str, kept: set[str]) -> bool:
    """Whether a memory that stays says ``form`` (within its own text): then the text is no secret to take out."""
    return any(form in k for k in kept)


def _keeps_its_text(record: MemoryRecord) -> bool:
    """A long-term memory that stays (history included) holds its text anyway; a turn is only the window's.

    A summary is not such a memory: it is the compressed window's, told again without the turns forgotten.
    """
    return record.tier is not Tier.WORKING and record.kind is not Kind.SUMMARY and record.status is not Status.DELETED


def _without(record: MemoryRecord, forms: set[str], sentences: set[str], now: datetime) -> MemoryRecord | None:
    """``record`` with the texts out of its context and its merged repeats' contexts; None if none held one."""
    context = _context_without(record.context, forms, sentences) if record.context else record.context
    sources = _entries_without(record.sources, forms, sentences)
    if context == record.context and sources == record.sources:
        return None
    return record.model_copy(update={"context": context, "sources": sources, "updated_at": now})


def _context_without(context: str, forms: set[str], sentences: set[str]) -> str | None:
    """``context`` without the texts standing whole in it (``forms``) and those said inside a longer line."""
    cleaned = without_forms(context, forms)
    return without_sentences(cleaned, sentences) if cleaned is not None and sentences else cleaned


def _entries_without(entries: list[Any], forms: set[str], sentences: set[str]) -> list[Any]:
    """Merged repeats with the texts out of their contexts, and out of those of the repeats nested in them (upkeep)."""
    return [_entry_without(entry, forms, sentences) if isinstance(entry, dict) else entry for entry in entries]


def _entry_without(entry: dict[str, Any], forms: set[str], sentences: set[str]) -> dict[str, Any]:
    cleaned_entry = dict(entry)
    nested = entry.get("sources")
    if isinstance(nested, list):
        cleaned_entry["sources"] = _entries_without(nested, forms, sentences)
    context = entry.get("context")
    if isinstance(context, str) and (cleaned := _context_without(context, forms, sentences)) != context:
        del cleaned_entry["context"]
        if cleaned is not None:
            cleaned_entry["context"] = cleaned
    return cleaned_entry


__all__ = ["ForgottenText", "said_forms", "said_in", "spoken_forms", "without_forms"]
