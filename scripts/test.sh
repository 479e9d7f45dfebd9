#!/usr/bin/env bash
# Installs dependencies, builds and runs the whole test suite (needs ../shared beside the repo),
# then the fast micro-only suites again under AddressSanitizer + UBSan (docs/ROBUSTNESS.md).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh --with-browser
bash scripts/build.sh
# ctest runs as many test processes as there are cores and each one runs OpenMP
# teams of that size: waiting threads sleep instead of spinning on cores another
# test needs (a micro video replay took 4.2 s beside a busy test instead of 0.5 s).
export OMP_WAIT_POLICY=passive
ctest --test-dir build --output-on-failure -j "$(nproc)"

# Sanitizer pass. The tiny-model suites, every suite with "Tiny" in its name (minutes
# under ASan; on lavapipe, minutes anyway: VulkanMaskDecoderTiny alone took 123 s under
# ASan on Zen 3), are left out (also
# GoldensWithoutAvx512, which repeats them on the AVX2 paths), and so are the numeric
# replays of the official video predictor (Micro/VideoPredictorGolden, ~10 s each under
# ASan, and their Vulkan form Micro/VulkanVideoGolden; the tracker runs sanitized in the
# CliTrack, CApiVideo and VideoTracker suites),
# the Tiny memory attention module golden, and the Vulkan
# numerics on lavapipe (Mesa's code, not ours, runs there; the Vulkan host code keeps
# its own suites); everything else runs the micro fixtures or synthetic inputs and takes
# seconds, including the robustness catalogue against the sanitized CLI. Line tables
# only (-g1): the sanitizers' stack traces need no more, and full debug information
# made this build a quarter slower. -O1, not -O2: the instrumented libraries compile
# in about 28% less time and these micro-sized suites run as fast (306 s here with
# another build beside them). No benchmarks and no Python extension: nothing here
# runs them.
sanitizer_start=$(date +%s)
cmake -S . -B build-asan -DSAM2RT_SANITIZE=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DSAM2RT_BUILD_BENCH=OFF -DSAM2RT_BUILD_PYTHON=OFF >/dev/null
cmake --build build-asan -j "$(nproc)"
left_out='[A-Za-z]*Tiny|Micro/VideoPredictorGolden|Micro/VulkanVideoGolden|MemoryAttention.MatchesTheTinyModuleGoldens|EncoderShapes|Bf16Encoder|GoldensWithoutAvx512|VulkanOpsTest|VulkanBackendOps|VulkanEncoderMicro'
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j "$(nproc)" -E "^($left_out|Vulkan|CliVulkan)"
# The suites that load the Vulkan driver, without the leak check: Debian's Mesa
# 22.3.6-1+deb12u2 leaks 128 bytes inside lavapipe (one realloc in the
# unloaded driver, "<unknown module>"); every other check of ASan and UBSan stays on.
ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j "$(nproc)" -R '^(Vulkan|CliVulkan)' -E "^($left_out)"
echo "sanitizer build and tests took $(($(date +%s) - sanitizer_start)) s"

# The Python package: its pytest suite against the extension just built, then
# `pip install .` into a throwaway venv that sees Debian's packages, and the
# example run from there (nothing from the source tree on the path).
python_start=$(date +%s)
repo=$PWD
fixtures=$repo/../shared/fixtures
PYTHONPATH="$repo/build/python" /usr/bin/python3 -m pytest -q python/tests
venv=$(mktemp -d)
trap 'rm -rf "$venv"' EXIT
/usr/bin/python3 -m venv --system-site-packages "$venv"
SAM2RT_BUILD_DIR="$repo/build" "$venv/bin/pip" install --no-build-isolation --no-deps --no-index -q .
(cd "$venv" && "$venv/bin/python" "$repo/examples/predictor.py" --config "$fixtures/micro/sam2.1_micro.yaml" \
  --checkpoint "$fixtures/micro/micro.pt" --image "$fixtures/images/chelsea_288x112.png" --point 110,41 \
  --out "$venv/mask.png")
echo "Python tests and install took $(($(date +%s) - python_start)) s"
