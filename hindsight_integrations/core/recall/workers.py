"""The threads a process's recalls hand work to (dates, BM25, currency checks, a second search).

One pool serves every engine of a process. A forked child inherits the pool but not its threads,
and the pool believes its idle ones still wait: what the child submitted would never run, and its
first recall would hang. So the child gets a pool of its own.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor


def _new_pool() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=4, thread_name_prefix="hindsight-recall")


_pool = _new_pool()


def recall_workers() -> ThreadPoolExecutor:
    """This process's recall pool."""
    return _pool


def _renew_after_fork() -> None:
    global _pool
    _pool = _new_pool()


os.register_at_fork(after_in_child=_renew_after_fork)

__all__ = ["recall_workers"]
