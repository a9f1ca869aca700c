#!/usr/bin/env bash
# Regenerates the type stubs of the extension module tensorgraph._tensorgraph
# (python/tensorgraph/_tensorgraph/**/*.pyi) from the built module with mypy's stubgen (Debian's
# python3-mypy): the signatures come from the bindings (pybind11 docstrings), and parameters that
# accept anything convertible (py::handle: arrays, scalars, shapes, dtype names) become Any.
# Usage: scripts/gen-python-stubs.sh [build-dir] (default build; the module in build-dir/python).
set -euo pipefail
cd "$(dirname "$0")/.."
B=${1:-build}
out=$(mktemp -d)
mods=(tensorgraph._tensorgraph tensorgraph._tensorgraph.nn tensorgraph._tensorgraph.nn.zoo
      tensorgraph._tensorgraph.nn.data tensorgraph._tensorgraph.onnx)
args=()
for m in "${mods[@]}"; do args+=(-m "$m"); done
PYTHONPATH=${TG_STUB_PYTHONPATH:-$B/python} /usr/bin/python3 -c "import sys; from mypy.stubgen import main; main()" -o "$out" "${args[@]}" >/dev/null
find "$out" -name '*.pyi' | while read -r f; do
  sed -i -E 's/\bhandle\b/Any/g' "$f"
  grep -q '^from typing import .*\bAny\b' "$f" || sed -i '1i from typing import Any' "$f"
done
rm -rf python/tensorgraph/_tensorgraph
cp -r "$out/tensorgraph/_tensorgraph" python/tensorgraph/
rm -rf "$out"
find python/tensorgraph/_tensorgraph -name '*.pyi' | sort | xargs wc -l | tail -1
