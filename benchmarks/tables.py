"""Print the Markdown tables of the README "Results" section from benchmarks/results/*.json.

    python benchmarks/tables.py            # after benchmarks/run_all.sh

The narrative in the README "Results" section is written by hand; the numbers come from here.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from hindsight_integrations.bench.adversarial_report import adversarial_table
from hindsight_integrations.bench.distinct import distinct_table
from hindsight_integrations.bench.floors import floors_table
from hindsight_integrations.bench.grid_report import grid_table, loo_table
from hindsight_integrations.bench.lifecycle_report import lifecycle_table
from hindsight_integrations.bench.load import load_table
from hindsight_integrations.bench.locomo_report import default_path_table, locomo_table, tokens_table
from hindsight_integrations.bench.peers_report import peers_table
from hindsight_integrations.bench.scale_report import profile_table, scale_table

RESULTS = Path(__file__).resolve().parent / "results"


def main() -> int:
    sections = [
        ("locomo.json", "LoCoMo evidence retrieval", lambda r: locomo_table(r)),
        ("locomo.json", "Default path", lambda r: default_path_table(r)),
        ("locomo.json", "Tokens", lambda r: tokens_table(r)),
        ("distinct.json", "Distinct facts", lambda r: distinct_table(r)),
        ("floors.json", "Relevance floors, leave one conversation out", lambda r: floors_table(r)),
        ("floors_e5.json", "Relevance floors with e5 for every conversation", lambda r: floors_table(r)),
        ("peers.json", "Peers", lambda r: peers_table(r)),
        ("peers_server.json", "Peers through a Chroma server", lambda r: peers_table(r)),
        ("grid.json", "Grid (top 10 settings)", lambda r: grid_table(r)),
        ("grid_default_loo.json", "Default-path weights, leave one conversation out", lambda r: loo_table(r)),
        (
            "grid_default_loo_access.json",
            "Default-path weights, leave one conversation out, access counted",
            lambda r: loo_table(r),
        ),
        ("scale.json", "Scale", lambda r: scale_table(r)),
        ("scale_100k.json", "Scale at 100k, embedded and through a server", lambda r: scale_table(r)),
        ("scale_100k_server.json", "Scale at 100k through a server, the latest run", lambda r: scale_table(r)),
        ("scale_small.json", "Scale at 1k and 10k, the latest run", lambda r: scale_table(r)),
        ("load.json", "Load on two replicas", lambda r: load_table(r)),
        ("lifecycle.json", "Lifecycle", lambda r: lifecycle_table(r)),
        ("adversarial.json", "Pathological inputs on a shared server", lambda r: adversarial_table(r)),
    ]
    for filename, title, render in sections:
        path = RESULTS / filename
        if not path.exists():
            print(f"## {title}\n\n(missing {path.name}: run benchmarks/run_all.sh)\n")
            continue
        print(f"## {title}\n\n{render(json.loads(path.read_text()))}\n")
    scale = RESULTS / "scale.json"
    if scale.exists():
        for run in json.loads(scale.read_text())["runs"]:
            if "profile" in run:
                print(
                    f"### Where a recall's time goes ({run['mode']}, {run['size']:,} memories)\n\n"
                    f"{profile_table(run['profile'])}\n"
                )
                print(f"ANN query with the default filter vs unfiltered: {run['profile']['ann_query_cost']}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
