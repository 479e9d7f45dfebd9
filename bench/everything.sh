#!/usr/bin/env bash
# The segment-everything figures of docs/PERFORMANCE.md (its per-CPU tables) and their bounds.
#   bash bench/everything.sh [SAM2_SOURCE_DIR]
# Tiny with synthetic weights, 2 threads, astronaut_1024.png. With a checkout of
# facebookresearch/sam2 (the fixtures' commit) also times the official generate()
# on the tiny_g16 case (Debian's python3-torch, python3-torchvision, python3-omegaconf, and
# libopenblas0-pthread: without it torch 1.13 runs on the reference BLAS, ~10x slower).
# For the >= 10x ratio itself, bench/official/side_by_side.sh alternates both sides.
set -euo pipefail
cd "$(dirname "$0")/.."
cli=./build/sam2rt
images=../shared/fixtures/images
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
model=(--variant tiny --synthetic-weights 0 --threads 2)

lscpu | grep -E "Model name|CPU family|^CPU\(s\)"
uptime

echo "== bench: decoder batch and everything (defaults: 32x32, no crops), thresholds 0 so every candidate is post-processed"
"$cli" bench "${model[@]}" --image "$images/astronaut_1024.png" --warmup 2 --runs 5 --everything-runs 3 \
  --pred-iou-thresh 0 --stability-score-thresh 0 --json "$scratch/bench.json"

echo "== whole process, defaults"
/usr/bin/time -f "%e s wall, %M KB peak RSS" "$cli" everything --quiet "${model[@]}" \
  --image "$images/astronaut_1024.png" --json "$scratch/e.json"
echo "== whole process, defaults with pred_iou/stability 0 (every candidate post-processed)"
/usr/bin/time -f "%e s wall, %M KB peak RSS" "$cli" everything --quiet "${model[@]}" \
  --image "$images/astronaut_1024.png" --json "$scratch/e.json" --pred-iou-thresh 0 --stability-score-thresh 0
echo "== whole process, --crop-n-layers 1 --crop-n-points-downscale-factor 2"
/usr/bin/time -f "%e s wall, %M KB peak RSS" "$cli" everything --quiet "${model[@]}" \
  --image "$images/astronaut_1024.png" --json "$scratch/e.json" --crop-n-layers 1 --crop-n-points-downscale-factor 2
echo "== whole process, tiny_g16 fixture case (astronaut.png 512x512, 16x16)"
/usr/bin/time -f "%e s wall, %M KB peak RSS" "$cli" everything --quiet "${model[@]}" \
  --image "$images/astronaut.png" --json "$scratch/g16.json" --points-per-side 16 --points-per-batch 32 \
  --pred-iou-thresh 0.68 --stability-score-thresh 0.9 --stability-score-offset 0.5 --mask-threshold 2.0 \
  --box-nms-thresh 1.0

echo "== peak RSS, 4000x3000 photo, --crop-n-layers 1, thresholds 0 (worst case for memory)"
/usr/bin/python3 -c "
from PIL import Image
Image.open('$images/coffee.png').convert('RGB').resize((4000, 3000), Image.BILINEAR).save('$scratch/big.png')"
/usr/bin/time -f "%e s wall, %M KB peak RSS" "$cli" everything --quiet "${model[@]}" --image "$scratch/big.png" \
  --json "$scratch/big.json" --crop-n-layers 1 --pred-iou-thresh 0 --stability-score-thresh 0

if [ $# -ge 1 ]; then
  echo "== official SAM2AutomaticMaskGenerator.generate(), tiny_g16, 2 threads"
  /usr/bin/python3 bench/official/time_official_amg.py "$1" --case ../shared/fixtures/amg/tiny_g16.json --threads 2
fi
uptime
