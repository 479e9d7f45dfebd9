#!/usr/bin/env bash
# Builds the libFuzzer targets (clang-14, ASan + UBSan) in build-fuzz and runs one:
#   scripts/fuzz.sh TARGET SECONDS [extra libFuzzer flags]
# TARGET is one of fuzz_torch_checkpoint, fuzz_safetensors, fuzz_config_yaml,
# fuzz_image, fuzz_prompt. The run starts from fuzz/corpus/TARGET, grows its
# corpus in build-fuzz/corpus/TARGET and writes crashing inputs to
# build-fuzz/artifacts/TARGET/. It runs at the lowest CPU priority, on one thread.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -lt 2 ]; then
  echo "usage: $0 TARGET SECONDS [libFuzzer flags...]" >&2
  exit 2
fi
target=$1
seconds=$2
shift 2
build=build-fuzz
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang-14 \
    -DCMAKE_CXX_COMPILER=clang++-14 -DSAM2RT_FUZZ=ON -DSAM2RT_BUILD_TESTS=OFF -DSAM2RT_BUILD_BENCH=OFF >/dev/null
fi
nice -n 19 make -C "$build" "$target" -j2 >/dev/null
mkdir -p "$build/corpus/$target" "$build/artifacts/$target"
# libFuzzer's -timeout (for hangs) counts wall time, and at the lowest priority
# on a busy machine an input of one CPU second has taken 45 s; one thread, as
# OpenMP workers spinning there only stretch it further.
export OMP_NUM_THREADS=1
exec nice -n 19 "$build/fuzz/$target" "$build/corpus/$target" "fuzz/corpus/$target" \
  -max_total_time="$seconds" -timeout=120 -rss_limit_mb=2048 -print_final_stats=1 \
  -artifact_prefix="$build/artifacts/$target/" "$@"
