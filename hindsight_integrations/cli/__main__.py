"""``python -m hindsight_integrations.cli``: the `hindsight` command without its console script."""

from __future__ import annotations

from . import main

main()
