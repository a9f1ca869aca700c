#!/usr/bin/env bash
# Packs what scripts/gpu-python-check needs to build and check the Python package on a GPU machine
# whose Python differs from this one (the lent H200: Python 3.12 with torch and JAX, no package
# registry): a shared libtg of a CUDA build (build-dir/libtg.so when configured with
# -DTG_BUILD_SHARED=ON, else one linked here from build-dir/libtg.a), the shared libraries it loads
# that such a machine lacks, the C++ ResNet-50 benchmark, the package's sources, the public
# headers, dlpack.h and pybind11's headers (used when torch brings none), into
# .gpu/pack-python.tar.xz. Usage: scripts/gpu-pack-python.sh [build-dir] (default build-cuda).
set -euo pipefail
cd "$(dirname "$0")/.."
B=${1:-build-cuda}
stage=$(mktemp -d)
mkdir -p "$stage"/{bin,lib,py,include,dlinc,pybind11inc} .gpu
exclude=$(git rev-parse --git-path info/exclude 2>/dev/null || echo .git/info/exclude)  # worktrees too
grep -qs '^/.gpu/' "$exclude" || { mkdir -p "$(dirname "$exclude")"; echo /.gpu/ >> "$exclude"; }
if [ -f "$B/libtg.so" ]; then
  cp -L "$B/libtg.so" "$stage/lib/"
else
  cuda=$(sed -n 's/^CUDA_cudart_static_LIBRARY:FILEPATH=\(.*\)\/libcudart_static.a/\1/p' "$B/CMakeCache.txt")
  c++ -shared -o "$stage/lib/libtg.so" -Wl,-soname,libtg.so -Wl,--whole-archive "$B/libtg.a" -Wl,--no-whole-archive \
      -fopenmp -lfmt -lz -ldnnl -lonnx_proto -lprotobuf "$cuda/libcudart_static.a" -ldl -lrt "$cuda/libcublasLt.so" \
      "$cuda/libnvrtc.so" "$cuda/stubs/libcuda.so" "$cuda/libcudnn.so" -Wl,--exclude-libs,libcudart_static.a \
      -Wl,--no-undefined
fi
# The C++ ResNet-50 benchmark when built (scripts/gpu-python-check compares with it).
[ -x "$B/bench/tg_bench_resnet50_cuda" ] && cp "$B/bench/tg_bench_resnet50_cuda" "$stage/bin/"
for f in "$stage/lib/libtg.so" "$stage"/bin/*; do
  [ -e "$f" ] || continue
  ldd "$f" | awk '/=> \//{print $3}' | while read -r lib; do
    case "$(basename "$lib")" in
      libc.so*|libm.so*|libstdc++*|libgcc_s*|ld-linux*|libpthread*|libdl.so*|librt.so*) ;;
      libcudnn*|libcublas*|libnvrtc*|libcudart*|libcuda.so*|libtg.so) ;;  # the machine's CUDA; ours
      *) cp -L "$lib" "$stage/lib/" ;;
    esac
  done
done
cp -r include/tg "$stage/include/"
cp -r python/src python/tensorgraph "$stage/py/"
find "$stage/py" -name __pycache__ -prune -exec rm -rf {} +
cp -r /usr/include/dlpack "$stage/dlinc/"
cp -r /usr/include/pybind11 "$stage/pybind11inc/"
cp examples/python/resnet50_fit.py bench/dlpack_cuda.py bench/torch_backend_cuda.py "$stage/"
tar -C "$stage" -cf - . | xz -T2 -6 > .gpu/pack-python.tar.xz
rm -rf "$stage"
ls -la .gpu/pack-python.tar.xz
