"""How a write is judged and applied: admission, repeats, supersedes, corrections.

``settle.py`` stores new memories (``neighbours.py`` finds what each is compared with),
``edit.py`` changes stored ones by id, ``forgetting.py`` takes a forgotten text out of the stored
contexts (``forgotten_copies.py`` out of what upkeep made of it), ``recovery.py`` finishes
supersedes a crash interrupted.
"""
