"""Upkeep: what keeps a namespace tidy between conversations, on demand or on a schedule.

The words, as used here and in the engine's API:

- *upkeep* is one whole run over a namespace (``runner.py``, ``MemoryEngine.upkeep``): its
  steps in order — ``compress`` (sessions left past their threshold), ``consolidate``
  (``merging.py`` merges repeats, then ``consolidation.py`` with ``clustering.py`` and
  ``distillation.py`` turns facts said again and again into semantic memories) and
  ``maintain``;
- *maintain* is the retention step (``retention.py``, ``MemoryEngine.maintain``): decay of
  idle memories, the cold-storage archive and the tier caps, and ``restore`` from the archive;
- *the schedule* (``schedule.py``) runs upkeep every interval over the namespaces served, and
  *the lease* (``lease.py``) makes one replica at a time run a round.
"""
