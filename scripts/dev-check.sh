#!/usr/bin/env bash
# Compiles single source files with the flags of a configured build dir (default build-cuda), for
# checking a change without building everything: scripts/dev-check.sh src/backends/cuda/unary.cpp
# src/backends/cuda/kernels/shape.cu tests/conformance/cases_binary.cpp. Objects go to /tmp.
set -euo pipefail
cd "$(dirname "$0")/.."
B=${TG_CHECK_BUILD_DIR:-build-cuda}
[ -f "$B/compile_commands.json" ] || { echo "configure $B first (cmake -S . -B $B -G Ninja)" >&2; exit 1; }
rc=0
for f in "$@"; do
  abs=$(realpath "$f")
  out=/tmp/dev-check-$(echo "$f" | tr '/' '_').o
  case "$f" in
    *.cu)
      cmd="/usr/local/cuda/bin/nvcc -DTG_HAVE_CUDA=1 -I$PWD/include -I$PWD/src -I$PWD/$B/generated -O3 -std=c++17 --expt-relaxed-constexpr -lineinfo -arch=sm_90 -c $abs -o $out" ;;
    tests/*)
      ref=$(python3 -c "import json,sys;d=json.load(open('$B/compile_commands.json'));print(next(e['command'] for e in d if e['file'].endswith('tests/conformance/cases_unary.cpp')))")
      cmd=$(echo "$ref" | sed "s#-o [^ ]*#-o $out#; s#-c [^ ]*#-c $abs#") ;;
    *)
      ref=$(python3 -c "import json,sys;d=json.load(open('$B/compile_commands.json'));print(next(e['command'] for e in d if e['file'].endswith('src/backends/cuda/unary.cpp')))")
      cmd=$(echo "$ref" | sed "s#-o [^ ]*#-o $out#; s#-c [^ ]*#-c $abs#") ;;
  esac
  echo "== $f"
  (cd "$B" && eval "$cmd") || rc=1
done
exit $rc
