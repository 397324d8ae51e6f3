"""Writing records back to a namespace's collection so that nothing of what they were stays behind.

Chroma merges the metadata of an update into what it holds: a key the update leaves out keeps its
old value. The stored layout (``records.pack``) mirrors scalar user metadata as ``m.<key>`` for
``where`` filters, so a key removed from a record (by an edit, an import, or the engine dropping
its own link such as ``summary_id``) would stay in Chroma and keep matching a metadata filter
(``{"metadata": {"key": value}}``, ``$in``, ``$ne``) there, and in the indexes the next process
builds from Chroma, while the record itself reads back without it. Only Chroma knows which keys
it holds (another process may have written the record last; an import rewrites records it never
read), so a rewrite reads them first and sets each one the record no longer has to None.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..model.records import pack_for_update
from .chroma_reads import float32_matrix


def rewrite_records(
    collection: Any,
    ids: Sequence[str],
    flats: Sequence[dict[str, Any]],
    embeddings: Sequence[Any] | np.ndarray | None = None,
) -> None:
    """Write back records (their flat views, ``flat_fields``) in place, with new ``embeddings`` if given."""
    got = collection.get(ids=list(ids), include=["metadatas"])
    stored = {memory_id: meta or {} for memory_id, meta in zip(got["ids"], got["metadatas"])}
    metadatas = [pack_for_update(flat, stored.get(memory_id, {})) for memory_id, flat in zip(ids, flats)]
    extra = {} if embeddings is None else {"embeddings": float32_matrix(embeddings)}
    collection.update(ids=list(ids), metadatas=metadatas, **extra)


__all__ = ["rewrite_records"]
