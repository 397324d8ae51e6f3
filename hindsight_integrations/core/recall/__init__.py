"""How recall finds, filters, ranks and packs memories into a context block."""
