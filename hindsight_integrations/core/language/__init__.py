"""Reading text: normalisation, tokens, values, subjects, slots, and the per-language rule packs."""
