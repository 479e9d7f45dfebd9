#!/usr/bin/env bash
# The Vulkan backend on a machine with a GPU that builds nothing there: prints the
# device, runs the Vulkan golden checks (ops, micro end to end, Tiny's encoder at 1024
# and its decoder; fp16 storage within its bounds) and `bench --device vulkan` (fp32
# and fp16) of Tiny next to `--device cpu`: the encoder, the decoder (one prompt, a
# batch of 64) and `everything` 32x32 (what issue 14's GPU bounds time), and writes
# every log and JSON to OUTDIR. --quick: micro instead of Tiny (an 8x8 grid), and Tiny
# at 256 against the CPU instead of its golden cases (minutes on lavapipe, not an hour).
#   scripts/device-bench.sh [--quick] OUTDIR
# Runs from device-bundle.tar.xz (scripts/device-pack.sh) when it lies in the
# repository root or SAM2RT_DEVICE_BUNDLE names it; otherwise from ./build and
# ../shared (a check on this machine's lavapipe). Exits nonzero when a check fails.
set -uo pipefail
quick=false
if [[ ${1:-} == --quick ]]; then quick=true; shift; fi
out=${1:?usage: scripts/device-bench.sh [--quick] OUTDIR}
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)

bundle=${SAM2RT_DEVICE_BUNDLE:-$root/device-bundle.tar.xz}
if [[ -f $bundle ]]; then
  unpacked=$(mktemp -d)
  trap 'rm -rf "$unpacked"' EXIT
  tar -xJf "$bundle" -C "$unpacked" || { echo "device-bench: cannot unpack $bundle" >&2; exit 1; }
  sam2rt=$unpacked/bin/sam2rt
  tests=$unpacked/bin/sam2rt_tests
  export LD_LIBRARY_PATH=$unpacked/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export VK_LAYER_PATH=$unpacked/layers
  export SAM2RT_SHARED_DIR=$unpacked/shared
else
  sam2rt=$root/build/sam2rt
  tests=$root/build/tests/sam2rt_tests
fi
[[ -x $sam2rt && -x $tests ]] || { echo "device-bench: no build (scripts/build.sh) and no bundle (scripts/device-pack.sh)" >&2; exit 1; }
# NVIDIA's driver manifest, where the loader would not look for it by itself.
nvidia_icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
if [[ -z ${VK_DRIVER_FILES:-} && -f $nvidia_icd ]]; then export VK_DRIVER_FILES=$nvidia_icd; fi

status=0
{
  echo "date: $(date -u +%FT%TZ)"
  echo "host: $(uname -srm), $(nproc) cores"
  command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  "$tests" --gtest_filter='VulkanDevice.DeviceZeroIsDescribed' 2>&1 | grep '^Vulkan device 0:'
} | tee "$out/device.txt"
grep -q '^Vulkan device 0:' "$out/device.txt" || { echo "device-bench: no usable Vulkan device" >&2; exit 1; }

tiny_checks='VulkanEncoderTiny.*:VulkanEncoderTinyFp16.*:VulkanMaskDecoderTiny.*:VulkanMaskDecoderTinyFp16.*'
$quick && tiny_checks='VulkanEncoderTiny.AtImageSize256MatchesTheCpu:VulkanEncoderTinyFp16.*'
echo "== golden checks (Vulkan ops, micro, fp16, $tiny_checks; validation layers on)"
start=$(date +%s)
"$tests" --gtest_filter="VulkanContextTest.*:VulkanOpsTest.*:VulkanBackendOps.*:VulkanEncoderMicro.*:VulkanFp16Test.*:$tiny_checks" \
  > "$out/goldens.log" 2>&1 || status=1
grep -E '^\[  (PASSED|FAILED) |tests? ran|^\[  FAILED  \]' "$out/goldens.log"
echo "golden checks: $(($(date +%s) - start)) s"

model=(--variant tiny)
runs=(--warmup 2 --runs 10 --batch 64 --everything-runs 3 --points-per-side 32)
if $quick; then
  model=(--config "${SAM2RT_SHARED_DIR:-$root/../shared}/fixtures/micro/sam2.1_micro.yaml")
  runs=(--warmup 1 --runs 3 --batch 8 --everything-runs 1 --points-per-side 8)
fi
image=${SAM2RT_SHARED_DIR:-$root/../shared}/fixtures/images/astronaut_1024.png
for run in vulkan:fp32 vulkan:fp16 cpu:fp32; do
  device=${run%%:*} precision=${run##*:}
  echo "== bench --device $device --precision $precision (${model[*]}, synthetic weights, astronaut_1024.png)"
  "$sam2rt" bench --synthetic-weights 0 "${model[@]}" --device "$device" --precision "$precision" --image "$image" \
    "${runs[@]}" --json "$out/bench-$device-$precision.json" > "$out/bench-$device-$precision.txt" 2>&1 || status=1
  grep -E '^(sam2rt bench|encoder|  upload|  encode on|  download|decoder|everything)' "$out/bench-$device-$precision.txt"
done
exit $status
