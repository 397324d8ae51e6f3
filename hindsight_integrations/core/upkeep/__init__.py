"""Upkeep: merging repeats, consolidating facts, decay and archive, on demand or on a schedule."""
