#!/usr/bin/env bash
# Installs dependencies, builds and runs the whole test suite (needs ../shared beside the repo).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh --with-browser
bash scripts/build.sh
ctest --test-dir build --output-on-failure -j "$(nproc)"
