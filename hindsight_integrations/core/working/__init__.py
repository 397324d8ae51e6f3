"""Working memory: a session's live window and its compression into episodes."""
