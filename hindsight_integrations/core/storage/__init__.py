"""Chroma and the indexes each process derives from it (lexical, field, vector copies, windows, locks); cold files."""
