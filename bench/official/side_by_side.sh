#!/usr/bin/env bash
# Issue 11's ">= 10x" check on the tiny_g16 fixture case, one machine, alternating:
# `sam2rt everything` as a whole process, then the official generate() alone
# (bench/official/time_official_amg.py, a fresh process each round), ROUNDS times,
# and our run once more at the end. Alternating keeps a drift of the host's speed
# out of the ratio; the medians and their ratio are printed last.
#   bash bench/official/side_by_side.sh SAM2_SOURCE_DIR [ROUNDS]   (default 3 rounds)
# Needs Debian's python3-torch, python3-torchvision, python3-omegaconf and
# libopenblas0-pthread (see time_official_amg.py) and a Release build in build/.
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ $# -lt 1 ]; then
  echo "usage: bash bench/official/side_by_side.sh SAM2_SOURCE_DIR [ROUNDS]" >&2
  exit 2
fi
sam2_source=$1
rounds=${2:-3}
case "$rounds" in
  '' | *[!0-9]* | 0) echo "ROUNDS must be a positive integer, got '$rounds'" >&2; exit 2 ;;
esac
cli=./build/sam2rt
case_file=../shared/fixtures/amg/tiny_g16.json
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

# Our side reads the case's photo and parameters from the same file as the
# official side: each parameter as the flag of the same name with dashes.
read -ra case_flags < <(/usr/bin/python3 -c '
import json, sys
case = json.load(open(sys.argv[1]))
flags = ["--image", "../shared/fixtures/images/" + case["image"]]
for key, value in case["params"].items():
    if key != "output_mode":
        flags += ["--" + key.replace("_", "-"), str(value).lower() if isinstance(value, bool) else str(value)]
print(" ".join(flags))' "$case_file")
if [ ${#case_flags[@]} -eq 0 ]; then
  echo "cannot read the case's photo and parameters from $case_file" >&2
  exit 1
fi

ours() {
  if ! /usr/bin/time -f "%e" -o "$scratch/time" "$cli" everything --quiet --variant tiny --synthetic-weights 0 \
    --threads 2 "${case_flags[@]}" --json "$scratch/g16.json" >"$scratch/ours.log" 2>&1; then
    echo "sam2rt everything failed:" >&2
    cat "$scratch/ours.log" >&2
    return 1
  fi
  cat "$scratch/time"
}

official() {
  if ! OMP_NUM_THREADS=2 /usr/bin/python3 bench/official/time_official_amg.py "$sam2_source" --case "$case_file" \
    --threads 2 --runs 1 >"$scratch/official.log" 2>&1 ||
    ! grep -q '^run 1: ' "$scratch/official.log"; then
    echo "the official generate() did not run:" >&2
    cat "$scratch/official.log" >&2
    return 1
  fi
  sed -n 's/^run 1: \([0-9.]*\) s.*/\1/p' "$scratch/official.log"
}

median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

lscpu | grep -E "Model name|CPU family|^Model:|^CPU\(s\)"
uptime
: >"$scratch/ours"
: >"$scratch/official"
for round in $(seq "$rounds"); do
  t=$(ours) || exit 1
  echo "$t" >>"$scratch/ours"
  echo "round $round: sam2rt everything (whole process) $t s"
  t=$(official) || exit 1
  echo "$t" >>"$scratch/official"
  echo "round $round: official generate() $t s"
done
t=$(ours) || exit 1
echo "$t" >>"$scratch/ours"
echo "last: sam2rt everything (whole process) $t s"
uptime
ours_median=$(median <"$scratch/ours")
official_median=$(median <"$scratch/official")
echo "median: sam2rt $ours_median s, official $official_median s, ratio $(awk -v a="$official_median" -v b="$ours_median" \
  'BEGIN {printf "%.2f", a / b}')x (issue 11 asks for >= 10x)"
