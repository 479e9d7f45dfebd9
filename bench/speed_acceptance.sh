#!/usr/bin/env bash
# The speed bars of docs/PERFORMANCE.md ("Bars") measured the way they are
# judged: oneDNN's GEMM rate and `sam2rt bench` in the same round, rounds
# alternating with a baseline build, medians over the rounds.
#   bash bench/speed_acceptance.sh [BASE] [ROUNDS]     (default: no baseline, 3 rounds)
# BASE is a git revision, built Release in a temporary worktree, or the path of
# a sam2rt binary built before; it runs beside ./build (which must be a
# Release build with bench/ configured).
# Each round and build: the fp32 and bf16 GEMM rates (PackedLinear
# 4096x384x1536), the encoder fp32 (with the decoder runs) and bf16 benches,
# and `sam2rt everything` with its defaults as a whole process. Prints the CPU,
# every round's figures and a summary: each build's median over the rounds and
# the encoder as a fraction of the GEMM rate, against the bars. The fraction is
# the bench's own (each encode over a GEMM timing right after it: "encoder /
# GEMM" in its output) where the build's bench has it, else the encode's
# median over the GEMM rate of the same round.
# Environment: RUNS (timed runs per bench, 5), WARMUP (1), THREADS (2).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
base_rev=${1:-}
rounds=${2:-3}
runs=${RUNS:-5}
warmup=${WARMUP:-1}
threads=${THREADS:-2}
image=../shared/fixtures/images/astronaut_1024.png
scratch=$(mktemp -d)
worktree=""

cleanup() {
  if [[ -n "$worktree" ]]; then git -C "$root" worktree remove --force "$worktree" >/dev/null 2>&1 || true; fi
  rm -rf "$scratch"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

for tool in build/sam2rt build/bench/sam2rt_bench; do
  if [[ ! -x $tool ]]; then
    echo "speed_acceptance: $tool is missing: build Release first (scripts/build.sh)" >&2
    exit 2
  fi
done
if [[ ! -f $image ]]; then
  echo "speed_acceptance: $image is missing: ../shared must sit beside the repository" >&2
  exit 2
fi

builds=(current)
declare -A cli=([current]="$root/build/sam2rt")
gemm_bench="$root/build/bench/sam2rt_bench"
if [[ -n $base_rev && -f $base_rev && -x $base_rev ]]; then
  builds=(base current)
  cli[base]=$(realpath "$base_rev")
elif [[ -n $base_rev ]]; then
  commit=$(git rev-parse --verify --quiet "$base_rev^{commit}") || {
    echo "speed_acceptance: '$base_rev' is neither a revision of this repository nor a sam2rt binary" >&2
    exit 2
  }
  worktree="$scratch/base"
  echo "== building the baseline $commit (Release) in $worktree"
  git worktree add --detach "$worktree" "$commit" >/dev/null
  cmake -S "$worktree" -B "$worktree/build" -DCMAKE_BUILD_TYPE=Release >"$scratch/base-configure.log" 2>&1 ||
    { tail -20 "$scratch/base-configure.log" >&2; exit 1; }
  cmake --build "$worktree/build" -j "$(nproc)" --target sam2rt >"$scratch/base-build.log" 2>&1 ||
    { tail -20 "$scratch/base-build.log" >&2; exit 1; }
  builds=(base current)
  cli[base]="$worktree/build/sam2rt"
fi

lscpu | grep -E "^Model name|^CPU family|^Model:|^CPU\(s\)"
echo "load: $(cat /proc/loadavg)"

# GFLOP/s of the GEMM benchmark with this precision argument (0 fp32, 1 bf16), or "-".
gemm_rate() {
  "$gemm_bench" --benchmark_filter="PackedLinear/4096/384/1536/$1/" --benchmark_min_time=2 2>/dev/null |
    sed -n 's/.*GFLOP\/s=\([0-9.]*\)G\/s.*/\1/p' | head -1 | grep . || echo "-"
}

results="$scratch/results.tsv"
for ((round = 1; round <= rounds; ++round)); do
  for build in "${builds[@]}"; do
    fp32_gemm=$(gemm_rate 0)
    bf16_gemm=$(gemm_rate 1)
    "${cli[$build]}" bench --synthetic-weights 0 --variant tiny --threads "$threads" --image "$image" \
      --warmup "$warmup" --runs "$runs" --json "$scratch/fp32.json" >/dev/null
    if ! "${cli[$build]}" bench --synthetic-weights 0 --variant tiny --threads "$threads" --image "$image" \
      --warmup "$warmup" --runs "$runs" --encoder-only --precision bf16 --json "$scratch/bf16.json" >/dev/null 2>&1; then
      echo '{}' >"$scratch/bf16.json"
    fi
    /usr/bin/time -f "%e" -o "$scratch/everything.time" "${cli[$build]}" everything --quiet --synthetic-weights 0 \
      --variant tiny --threads "$threads" --image "$image" --json "$scratch/everything.json" >/dev/null 2>&1
    /usr/bin/python3 - "$round" "$build" "$fp32_gemm" "$bf16_gemm" "$scratch" >>"$results" <<'EOF'
import json, sys
round_, build, fp32_gemm, bf16_gemm, scratch = sys.argv[1:]
fp32 = json.load(open(f"{scratch}/fp32.json"))
bf16 = json.load(open(f"{scratch}/bf16.json"))
everything_s = float(open(f"{scratch}/everything.time").read().split()[-1])
median = lambda d, key: d[key]["median"] if key in d else float("nan")
rate = lambda s: float(s) if s != "-" else float("nan")
def of_gemm(d, gemm):
    if "encoder_of_gemm" in d:
        return d["encoder_of_gemm"]
    return 2 * d["encoder_gmac"] / (median(d, "encoder_ms") / 1000) / rate(gemm) if "encoder_gmac" in d else float("nan")
print("\t".join(str(v) for v in [round_, build, rate(fp32_gemm), rate(bf16_gemm), median(fp32, "encoder_ms"),
      median(bf16, "encoder_ms"), of_gemm(fp32, fp32_gemm), of_gemm(bf16, bf16_gemm), median(fp32, "decoder_ms"),
      median(fp32, "decoder_batch64_ms_per_prompt"), everything_s]))
EOF
    tail -1 "$results" | awk -F'\t' '{printf "round %s %-7s GEMM fp32 %.1f bf16 %.1f GFLOP/s | encoder fp32 %.1f ms (%.1f%%) bf16 %.1f ms (%.1f%%) | decoder 1 prompt %.2f, per prompt of 64 %.2f ms | everything %.2f s\n", $1, $2, $3, $4, $5, 100 * $7, $6, 100 * $8, $9, $10, $11}'
  done
done

/usr/bin/python3 - "$results" <<'EOF'
import math, statistics, sys
rows = [line.rstrip("\n").split("\t") for line in open(sys.argv[1])]
builds = list(dict.fromkeys(r[1] for r in rows))
def med(values):
    values = [v for v in values if not math.isnan(v)]
    return statistics.median(values) if values else float("nan")
print("\nmedians over the rounds (the encoder's fraction of the GEMM rate: of the model's work, as bench counts it)")
print(f"{'':24}" + "".join(f"{b:>12}" for b in builds) + "   bar (Zen 5)")
def line(name, per_build, bar):
    print(f"{name:24}" + "".join(f"{v:>12.3f}" for v in per_build) + f"   {bar}")
def column(build, index):
    return [float(r[index]) for r in rows if r[1] == build]
line("GEMM fp32 GFLOP/s", [med(column(b, 2)) for b in builds], "")
line("GEMM bf16 GFLOP/s", [med(column(b, 3)) for b in builds], "")
line("encoder fp32 ms", [med(column(b, 4)) for b in builds], "")
line("  of the GEMM rate", [med(column(b, 6)) for b in builds], ">= 0.85")
line("encoder bf16 ms", [med(column(b, 5)) for b in builds], "")
line("  of the bf16 GEMM rate", [med(column(b, 7)) for b in builds], ">= 0.75")
line("decoder 1 prompt ms", [med(column(b, 8)) for b in builds], "<= 6")
line("per prompt of 64 ms", [med(column(b, 9)) for b in builds], "<= 4")
line("everything s", [med(column(b, 10)) for b in builds], "<= 5")
EOF
echo "load: $(cat /proc/loadavg)"
