#!/usr/bin/env bash
# Compiles (g++) and runs every host harness h*.cpp that tg_fused_reduce_emu wrote in DIR; exits 1
# when a kernel's outputs differ from the float64 evaluation. Usage: run.sh DIR
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
dir=${1:?usage: run.sh DIR}
cxx=${CXX:-g++}
rc=0 n=0
for h in "$dir"/h*.cpp; do
  [ -e "$h" ] || { echo "no harness in $dir"; exit 1; }
  exe=${h%.cpp}
  "$cxx" -std=c++20 -O1 -pthread -w -DTG_HOST_EMULATION -include "$root/tools/kernel_emu/shim.h" \
    -I"$root/include" -I"$root/src/backends/cuda/device" -I"$dir" "$h" -o "$exe" || { rc=1; continue; }
  timeout "${TG_EMU_TIMEOUT:-300}" "$exe" || rc=1
  n=$((n + 1))
done
echo "$n kernels emulated"
exit $rc
