#!/usr/bin/env bash
# Train the three bundled models from scratch, in order, on this repo's generated scenes.
# Each run writes a resumable state under runs/; rerunning this script continues where a run
# stopped (finished models are skipped). Logs: runs/<name>.log. Guide: docs/development.md.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
OUT=vit_core/bundled
COMMON=(--batch 64 --dim 128 --depth 6 --heads 4 --patch 32 --save-every 100 --eval-n 300)

run() {  # run NAME ARGS... unless $OUT/NAME.safetensors exists
  local name=$1; shift
  if [ -f "$OUT/$name.safetensors" ]; then echo "$name: already trained"; return; fi
  $PY -m vit_core.scenes.train --out "$OUT/$name.safetensors" "${COMMON[@]}" "$@" 2>&1 \
    | tee -a "runs/$name.log"
}

PATCH_NOTE="Why patch 32 (a 7×7 grid) and not 16: on this 2-core machine a 16×16-patch ViT
(196 tokens) trained at 18–70 images/s against ~240 for 32×32 patches (49 tokens), which would
not reach the bars within the 3-hour budget. The notes' 14×14 geometry stays in the app through
the vit-b16 presets and loaded checkpoints. The segmentation head predicts an 8×8 block of cells
per patch (a 56×56 class map), and its loss weights object cells 5× so that patch tokens learn
shapes early, which also made the classifier learn faster (34 % vs 21 % held-out at step 500)."
CAPTION_NOTE="The prefix and causal captioners are identical in size, data (the same seed stream),
steps and settings, and both start from the classifier's image side; only the attention mask they
train with differs. Position words (\"on the left\", \"at the top\") were the hard part: the
classifier's learned positions have RMS 0.19 against 2.45 for the patch content, so after LayerNorm
a caption word can hardly read where the object is. Adding 2D sine-cosine codes of RMS 1.5 to the
patch positions at the start of training (--pos-sincos 1.5, still trainable) fixed that: in 600-step
pilots the prefix captioner went from 31 % exact captions (no codes; 31 % with RMS 0.2) to 94 %,
with left/right and top/bottom confusions gone."

mkdir -p runs
run shapes-classifier --task classify --steps 8000 --lr 1e-3 --warmup 300 --seg-fg-weight 5 \
  --eval-every 250 --note "$PATCH_NOTE"
for mask in prefix causal; do
  run "shapes-captioner-$mask" --task caption --mask "$mask" --steps 1500 --lr 1e-3 \
    --warmup 100 --label-smoothing 0.05 --pos-sincos 1.5 --eval-every 250 \
    --init "$OUT/shapes-classifier.safetensors" --note "$CAPTION_NOTE"
done
