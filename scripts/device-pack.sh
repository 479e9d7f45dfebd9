#!/usr/bin/env bash
# Packs what scripts/device-bench.sh needs on a GPU machine that builds nothing
# into one archive: the built sam2rt and sam2rt_tests, every shared library they
# load beyond glibc (oneDNN, codecs, ...), the Vulkan loader and validation layer,
# and the fixtures the Vulkan golden tests read. Run here after a build; carry
# the archive (device-bundle.tar.xz by default, git-ignored) to the machine.
#   scripts/device-pack.sh [ARCHIVE]
set -euo pipefail
cd "$(dirname "$0")/.."
archive=${1:-device-bundle.tar.xz}
build=${SAM2RT_BUILD_DIR:-build}
for binary in "$build/sam2rt" "$build/tests/sam2rt_tests"; do
  [[ -x $binary ]] || { echo "device-pack: $binary is missing; build first (scripts/build.sh)" >&2; exit 1; }
done
fixtures=../shared/fixtures
[[ -d $fixtures ]] || { echo "device-pack: $fixtures is missing" >&2; exit 1; }

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib" "$stage/layers" "$stage/shared/fixtures/micro" "$stage/shared/fixtures/tiny" \
  "$stage/shared/fixtures/images"
cp "$build/sam2rt" "$build/tests/sam2rt_tests" "$stage/bin/"
# Libraries: everything ldd resolves except glibc's own (the machine's glibc must be as new as ours).
{ ldd "$build/sam2rt"; ldd "$build/tests/sam2rt_tests"; } | awk '$2 == "=>" && $3 ~ /^\// {print $3}' | sort -u |
  grep -Ev '/(libc|libm|libpthread|libdl|librt|ld-linux-x86-64)\.so' | while read -r lib; do cp -L "$lib" "$stage/lib/"; done
# Opened at run time, so not in ldd's list: the loader and the validation layer (the tests turn it on).
cp -L /usr/lib/x86_64-linux-gnu/libvulkan.so.1 "$stage/lib/"
cp -L /usr/lib/x86_64-linux-gnu/libVkLayer_khronos_validation.so "$stage/lib/"
cp /usr/share/vulkan/explicit_layer.d/VkLayer_khronos_validation.json "$stage/layers/"
cp "$fixtures/micro/golden.safetensors" "$fixtures/micro/sam2.1_micro.yaml" "$fixtures/micro/prompts.json" \
  "$stage/shared/fixtures/micro/"
cp -r "$fixtures/micro/masks" "$stage/shared/fixtures/micro/"
cp "$fixtures/tiny/golden.safetensors" "$fixtures/tiny/stats.json" "$fixtures/tiny/prompts.json" \
  "$stage/shared/fixtures/tiny/"
cp -r "$fixtures/tiny/masks" "$stage/shared/fixtures/tiny/"
cp "$fixtures/images/astronaut.png" "$fixtures/images/astronaut_1024.png" "$stage/shared/fixtures/images/"
tar -C "$stage" -cf - . | xz -T0 -6 > "$archive.partial"
mv "$archive.partial" "$archive"
echo "device-pack: $archive ($(du -h "$archive" | cut -f1))"
