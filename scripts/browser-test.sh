#!/usr/bin/env bash
# Lints the page of `sam2rt serve` (web/, ESLint), decodes the Label Studio
# answer's brush RLE with Label Studio's own decoder (@thi.ng/rle-pack, in Node.js),
# then tests the page end to end in real headless Chromium, driven by
# playwright-core (tests/browser). Usage:
#   scripts/browser-test.sh [path/to/sam2rt]     (default: build/sam2rt)
# Installs Chromium (Debian's /usr/bin/chromium) and Node.js if missing, and the
# locked npm packages of tests/browser (playwright-core, @thi.ng/rle-pack, eslint); playwright never
# downloads a browser.
# Leaves build/browser-test/screenshot.png.
set -euo pipefail
cd "$(dirname "$0")/.."
binary="${1:-build/sam2rt}"
if [ ! -x "$binary" ]; then
  echo "browser-test: no sam2rt binary at '$binary'; build first (scripts/build.sh)" >&2
  exit 2
fi
binary="$(realpath "$binary")"
fixtures="$(realpath ../shared/fixtures)"

missing=()
[ -x "${CHROMIUM:-/usr/bin/chromium}" ] || missing+=(chromium)
# Debian packages npm apart from nodejs (nodesource's nodejs includes it).
if ! command -v node >/dev/null; then
  missing+=(nodejs npm)
elif ! command -v npm >/dev/null; then
  missing+=(npm)
fi
if ((${#missing[@]})); then
  sudo_cmd=()
  [ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y "${missing[@]}"
fi

# npm ci only when the installed packages do not match the lock file.
if ! cmp -s tests/browser/package-lock.json tests/browser/node_modules/.package-lock.json.sam2rt 2>/dev/null; then
  (cd tests/browser && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund)
  cp tests/browser/package-lock.json tests/browser/node_modules/.package-lock.json.sam2rt
fi

tests/browser/node_modules/.bin/eslint --config tests/browser/eslint.config.mjs web tests/browser
echo "browser-test: eslint found nothing in web/ and tests/browser/"

node tests/browser/label_studio_rle.test.mjs "$binary" "$fixtures"

mkdir -p build/browser-test
node tests/browser/serve_page.test.mjs "$binary" "$fixtures" build/browser-test
