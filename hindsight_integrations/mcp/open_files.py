"""Let an HTTP server use the open files its hard limit allows: each connection holds one.

Many systems start a process with a soft limit of 1,024 open files however high the hard limit
is; a shared server at 1,024 refuses every new connection (``Too many open files``) long before
the machine is busy, while any process may raise its own soft limit up to the hard one. So a
server about to serve HTTP does (to at most ``OPEN_FILES_CAP``), and says so in its log. Where the
limit cannot be raised (the hard limit is the soft one, or the system refuses), it keeps the one
it has and says how to raise it; nothing fails.
"""

from __future__ import annotations

from dataclasses import dataclass

OPEN_FILES_CAP = 1_048_576
"""The most a server asks for, even when the hard limit is unlimited (some systems refuse that)."""
LOW_OPEN_FILES = 4096
"""Below this a shared server is warned: about as many connections at once as the limit allows."""


@dataclass(frozen=True)
class OpenFiles:
    """The soft open-file limit the server started with (``was``) and serves with (``limit``); None: unknown."""

    was: int | None
    limit: int | None
    hard: int | None
    problem: str = ""

    def log_fields(self) -> dict[str, object]:
        """What the start-up log says of it."""
        fields: dict[str, object] = {"open_files_limit": self.limit}
        if self.was != self.limit:
            fields["open_files_limit_was"] = self.was
        if self.problem:
            fields["open_files_problem"] = self.problem
        return fields

    @property
    def low(self) -> bool:
        """Whether the server may run out of connections well before the machine is busy."""
        return self.limit is not None and self.limit < LOW_OPEN_FILES


def raise_open_file_limit(cap: int = OPEN_FILES_CAP) -> OpenFiles:
    """Raise this process's soft open-file limit to its hard limit (at most ``cap``); what it now is."""
    try:
        import resource
    except ImportError:  # Windows: no such limit to raise
        return OpenFiles(None, None, None)
    unlimited = resource.RLIM_INFINITY
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    finite_hard = None if hard == unlimited else hard
    if soft == unlimited:
        return OpenFiles(None, None, finite_hard)
    wanted = cap if finite_hard is None else min(finite_hard, cap)
    if soft >= wanted:
        return OpenFiles(soft, soft, finite_hard)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
    except (ValueError, OSError) as exc:
        return OpenFiles(soft, soft, finite_hard, f"could not raise it to {wanted}: {exc}")
    return OpenFiles(soft, wanted, finite_hard)


__all__ = ["LOW_OPEN_FILES", "OPEN_FILES_CAP", "OpenFiles", "raise_open_file_limit"]
