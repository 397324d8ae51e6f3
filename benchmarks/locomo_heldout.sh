#!/usr/bin/env bash
# Evaluate on conversations we never tuned on: prints one JSON object on stdout.
#   benchmarks/locomo_heldout.sh /path/to/locomo_heldout > heldout.json
set -euo pipefail
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
exec hindsight bench locomo --data "${1:?usage: $0 DIR}" --json
