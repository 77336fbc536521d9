#!/usr/bin/env bash
# Train the three bundled models from scratch, in order, on this repo's generated scenes.
# Each run writes a resumable state under runs/; rerunning this script continues where a run
# stopped (finished models are skipped). Logs: runs/<name>.log. Measured wall times: README.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
OUT=vit_core/bundled
COMMON=(--batch 64 --dim 128 --depth 6 --heads 4 --patch 32 --save-every 100 --eval-n 300)

run() {  # run NAME ARGS... unless $OUT/NAME.safetensors exists
  local name=$1; shift
  if [ -f "$OUT/$name.safetensors" ]; then echo "$name: already trained"; return; fi
  $PY -m vit_core.train --out "$OUT/$name.safetensors" "${COMMON[@]}" "$@" 2>&1 \
    | tee -a "runs/$name.log"
}

mkdir -p runs
run shapes-classifier --task classify --steps 8000 --lr 1e-3 --warmup 300 --seg-fg-weight 5 \
  --eval-every 250
for mask in prefix causal; do
  run "shapes-captioner-$mask" --task caption --mask "$mask" --steps 1500 --lr 1e-3 \
    --warmup 100 --label-smoothing 0.05 --eval-every 250 --init "$OUT/shapes-classifier.safetensors"
done
