#!/usr/bin/env bash
# Packs what scripts/gpu-check needs on a GPU machine that has the CUDA toolkit and cuDNN but not
# this project's other libraries (the lent H200 machine: no package registry there): the test,
# CLI and benchmark binaries of a CUDA build, the shared libraries they load that such a machine
# lacks (oneDNN, fmt, protobuf, ONNX, OpenMP), and the ONNX node tests (../shared/onnx), into
# .gpu/pack.tar.xz (ignored by git). Usage: scripts/gpu-pack.sh [build-dir] (default build-cuda).
set -euo pipefail
cd "$(dirname "$0")/.."
B=${1:-build-cuda}
stage=$(mktemp -d)
mkdir -p "$stage/bin" "$stage/lib" .gpu
exclude=$(git rev-parse --git-path info/exclude 2>/dev/null || echo .git/info/exclude)  # worktrees too
grep -qs '^/.gpu/' "$exclude" || { mkdir -p "$(dirname "$exclude")"; echo /.gpu/ >> "$exclude"; }
for f in "$B/tests/tg_tests" "$B/bin/tg" "$B/bench/tg_bench_resnet50_cuda" "$B/bench/tg_bench_latency_cuda" \
         "$B/bench/tg_bench_control_flow_cuda" "$B/bench/tg_bench_stencil_cuda" \
         "$B/bench/tg_bench_cold_start_cuda" "$B/bench/tg_bench_dynamic_cuda" \
         "$B/bench/tg_bench_data_parallel_cuda"; do
  [ -x "$f" ] && cp "$f" "$stage/bin/"
done
for f in "$stage"/bin/*; do
  ldd "$f" | awk '/=> \//{print $3}' | while read -r lib; do
    case "$(basename "$lib")" in
      libc.so*|libm.so*|libstdc++*|libgcc_s*|ld-linux*|libpthread*|libdl.so*|librt.so*) ;;
      libcudnn*|libcublas*|libnvrtc*|libcudart*|libcuda.so*) ;;  # from the machine's CUDA install
      *) cp -L "$lib" "$stage/lib/" ;;
    esac
  done
done
if [ -d ../shared/onnx ]; then mkdir -p "$stage/shared" && cp -rL ../shared/onnx "$stage/shared/"; fi
tar -C "$stage" -cf - . | xz -T2 -6 > .gpu/pack.tar.xz
rm -rf "$stage"
ls -la .gpu/pack.tar.xz
