#!/usr/bin/env bash
# Regenerates fuzz/corpus/ (the seed corpora) with the seed writer of a fuzz
# build (scripts/fuzz.sh configures build-fuzz); the YAML seeds are the micro
# fixture config and a small variant of it.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build-fuzz}
make -C "$BUILD" fuzz_seed_writer -j2 >/dev/null
"$BUILD/fuzz/fuzz_seed_writer" fuzz/corpus
mkdir -p fuzz/corpus/fuzz_config_yaml
yaml=../shared/fixtures/micro/sam2.1_micro.yaml
install -m 644 "$yaml" fuzz/corpus/fuzz_config_yaml/micro.yaml
# Only what the image path reads, with hiera defaults where keys are left out.
sed -n '/^model:/,/^  memory_attention:/p' "$yaml" | sed '$d' >fuzz/corpus/fuzz_config_yaml/image_path_only.yaml
ls -R fuzz/corpus | head -40
