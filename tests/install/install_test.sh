#!/usr/bin/env bash
# Installs the build tree into a temporary prefix as a user would (`cmake --install`), checks
# what libsam2rt.so exports and its SONAME, builds segment_point.c against the installed tree
# twice (find_package(sam2rt) in this folder's CMakeLists.txt, and plain cc + pkg-config),
# runs both on the micro fixture and compares their results with the C++ API's, bit for bit.
# usage: install_test.sh CMAKE BUILD_DIR VERSION COMPARE_WITH_CPP_API
set -euo pipefail
if [ $# -ne 4 ]; then
  echo "usage: $0 CMAKE BUILD_DIR VERSION COMPARE_WITH_CPP_API" >&2
  exit 2
fi
cmake=$1 build_dir=$2 version=$3 compare=$4
here=$(cd "$(dirname "$0")" && pwd)
fixtures=$here/../../../shared/fixtures
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix

"$cmake" --install "$build_dir" --prefix "$prefix" >/dev/null
pc_file=$(find "$prefix" -name sam2rt.pc)
library=$(find "$prefix" -name "libsam2rt.so.$version")
[ -n "$pc_file" ] && [ -n "$library" ] || { echo "install: sam2rt.pc or libsam2rt.so.$version missing" >&2; exit 1; }
[ -x "$prefix/bin/sam2rt" ] && [ -f "$prefix/include/sam2rt_c.h" ] || { echo "install: CLI or header missing" >&2; exit 1; }

# Only the C API is visible; the SONAME follows the version (MAJOR.MINOR before 1.0).
foreign=$(nm -D --defined-only "$library" | awk '{print $3}' | grep -v '^sam2rt_' || true)
if [ -n "$foreign" ]; then
  echo "libsam2rt.so exports symbols other than sam2rt_*:" >&2
  echo "$foreign" | head -20 >&2
  exit 1
fi
soname=$(objdump -p "$library" | awk '$1 == "SONAME" {print $2}')
major=${version%%.*} minor_rest=${version#*.}
expected_soname=libsam2rt.so.$major
[ "$major" = 0 ] && expected_soname=libsam2rt.so.0.${minor_rest%%.*}
[ "$soname" = "$expected_soname" ] || { echo "SONAME is '$soname', expected $expected_soname" >&2; exit 1; }

"$cmake" -S "$here" -B "$work/with-cmake" -DCMAKE_PREFIX_PATH="$prefix" -DSAM2RT_EXPECTED_VERSION="$version" >/dev/null
"$cmake" --build "$work/with-cmake" >/dev/null

export PKG_CONFIG_PATH
PKG_CONFIG_PATH=$(dirname "$pc_file")
[ "$(pkg-config --modversion sam2rt)" = "$version" ] || { echo "sam2rt.pc has the wrong version" >&2; exit 1; }
# shellcheck disable=SC2046  # pkg-config's flags are meant to be split
cc -std=c11 -Wall -Wextra -Wpedantic -Werror "$here/segment_point.c" $(pkg-config --cflags --libs sam2rt) \
  -o "$work/with-pkg-config"

inputs=("$fixtures/micro/micro.pt" "$fixtures/micro/sam2.1_micro.yaml" "$fixtures/images/chelsea_288x112.png")
"$work/with-cmake/segment_point" "$version" "${inputs[@]}" "$work/cmake.result" "$work/cmake.safetensors"
LD_LIBRARY_PATH=$(pkg-config --variable=libdir sam2rt) \
  "$work/with-pkg-config" "$version" "${inputs[@]}" "$work/pkg-config.result" "$work/pkg-config.safetensors"
"$compare" "${inputs[@]}" "$work/cmake.result" "$work/pkg-config.result"
# The saved features are what `sam2rt encode --decoder-ready` writes: the installed CLI reads them.
"$prefix/bin/sam2rt" segment --model "${inputs[0]}" --config "${inputs[1]}" --image "${inputs[2]}" \
  --features "$work/cmake.safetensors" --point 110,41 --out "$work/from-features.png" >/dev/null
