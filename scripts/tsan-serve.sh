#!/usr/bin/env bash
# ThreadSanitizer on `sam2rt serve`'s threads (HTTP workers, video propagation,
# the image cache): builds the CLI with -fsanitize=thread into build-tsan (no
# Vulkan, no tests), then drives a server through concurrent video and image
# requests (tests/tsan/serve_driver.py) and fails on any ThreadSanitizer report.
# Compute runs on one OpenMP thread: GCC's libgomp is not instrumented, so its
# barriers would read as races. Not part of scripts/test.sh (the build takes
# about 15 minutes on 2 cores). Usage: scripts/tsan-serve.sh
set -euo pipefail
cd "$(dirname "$0")/.."
fixtures="$(realpath ../shared/fixtures)"
# GCC 12's instrumentation makes -Wmaybe-uninitialized fire falsely (as under ASan).
cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
  -DCMAKE_CXX_FLAGS="-fsanitize=thread -Wno-maybe-uninitialized" -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=thread" \
  -DSAM2RT_BUILD_BENCH=OFF -DSAM2RT_BUILD_PYTHON=OFF -DSAM2RT_BUILD_TESTS=OFF -DSAM2RT_VULKAN=OFF >/dev/null
cmake --build build-tsan -j "$(nproc)" --target sam2rt
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# An MP4 of the leave clip, as `track --overlay-video` writes it.
build-tsan/sam2rt track --config "$fixtures/micro/sam2.1_micro.yaml" --model "$fixtures/micro/micro.pt" \
  --video tests/video/clips/leave --point 0:1,1 --out-dir "$work/masks" --overlay-video "$work/leave.mp4" \
  --threads 1 --quiet
TSAN_OPTIONS="halt_on_error=0 report_signal_unsafe=0" OMP_NUM_THREADS=1 \
  python3 tests/tsan/serve_driver.py build-tsan/sam2rt "$work/leave.mp4" "$fixtures/images/chelsea_288x112.png" \
  "$fixtures/micro" "$work/serve.log"
if grep -q "WARNING: ThreadSanitizer" "$work/serve.log"; then
  grep -A30 "WARNING: ThreadSanitizer" "$work/serve.log" >&2
  echo "tsan-serve: ThreadSanitizer reported races (above)" >&2
  exit 1
fi
echo "tsan-serve: no ThreadSanitizer reports"
