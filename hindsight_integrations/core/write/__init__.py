"""How a write is judged and applied: admission, repeats, supersedes, corrections, the writer."""
