#!/usr/bin/env bash
# Installs the Debian 12 packages sam2rt builds with. Idempotent: runs apt-get
# (one update, one install) only when something is missing.
#   --with-browser   also Chromium and Node.js for the browser test of `sam2rt serve`
set -euo pipefail
packages=(
  build-essential cmake pkg-config
  libdnnl-dev            # GEMM (oneDNN)
  libvulkan-volk-dev libvulkan-dev glslc   # Vulkan backend: loader opened at run time, headers, shader compiler
  mesa-vulkan-drivers vulkan-validationlayers   # its tests: lavapipe (Vulkan on the CPU), validation layers
  libpng-dev libjpeg62-turbo-dev libexif-dev zlib1g-dev   # image codecs, EXIF orientation
  libavformat-dev libavcodec-dev libswscale-dev libavutil-dev libavdevice-dev   # video files, pipes, cameras (FFmpeg)
  libyaml-cpp-dev        # official-format model configs
  nlohmann-json3-dev     # safetensors headers, JSON outputs
  libcli11-dev           # command line
  libopencv-imgproc-dev  # contour tracing for mask polygons
  libcpp-httplib-dev     # `sam2rt serve`
  libssl-dev             # `sam2rt serve`: SHA-256 of the labelling tools' images
  libgtest-dev libbenchmark-dev   # tests and micro-benchmarks
  python3 python3-numpy  # the fixtures' own checker of segment-everything results (check_amg.py)
  libcurl4-openssl-dev openssl   # `sam2rt download` (HTTPS); openssl makes the test's certificate
  # The Python package (python/): extension, pip install / wheel offline, its tests.
  python3-dev pybind11-dev python3-pil
  python3-pip python3-setuptools python3-wheel python3-venv python3-build python3-pytest
  python3-distributed    # sam2rt.dask: batch jobs on a Dask cluster (python/sam2rt/dask.py)
)
if [ "${1:-}" = "--with-browser" ]; then
  packages+=(chromium)
  command -v node >/dev/null || packages+=(nodejs)
  command -v npm >/dev/null || packages+=(npm)
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  sudo_cmd=()
  [ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y "${missing[@]}"
fi
