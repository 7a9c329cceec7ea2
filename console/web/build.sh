#!/usr/bin/env bash
# Builds the console's front end into OUTDIR: index.html, app.js, app.css (uPlot's CSS included).
# usage: console/web/build.sh OUTDIR
set -euo pipefail

if [ $# -ne 1 ] || [ -z "$1" ]; then
  echo "usage: $0 OUTDIR" >&2
  exit 2
fi
mkdir -p "$1"
OUT="$(cd "$1" && pwd)"
cd "$(dirname "${BASH_SOURCE[0]}")"

# Install the pinned packages when node_modules is missing or older than the lock file.
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund
  touch node_modules/.package-lock.json
fi

npx --no-install tsc --noEmit

TMP="$(mktemp -d "$OUT/.build.XXXXXX")"
trap 'rm -rf "$TMP"' EXIT

node build.mjs "$TMP"
cp static/index.html "$TMP/index.html"
{
  cat node_modules/uplot/dist/uPlot.min.css
  printf '\n'
  cat static/app.css
} > "$TMP/app.css"

for f in index.html app.js app.css; do
  [ -s "$TMP/$f" ] || { echo "build.sh: $f was not produced" >&2; exit 1; }
  mv -f "$TMP/$f" "$OUT/$f"
done
echo "built $OUT/index.html $OUT/app.js $OUT/app.css"
