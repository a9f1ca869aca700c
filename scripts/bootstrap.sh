#!/usr/bin/env bash
# Idempotent set-up: installs the Debian packages TensorGraph needs (when run as root and one is
# missing), then configures and builds into build/ (Release, Ninja). Safe to run again.
# Environment: TG_BUILD_DIR (default build), TG_BUILD_TYPE (Release), TG_CMAKE_ARGS (extra
# configure arguments), TG_BUILD_TARGET (space-separated targets to build, e.g. tg_cli for the
# `tg` command alone; default: everything).
set -euo pipefail
cd "$(dirname "$0")/.."

# gnuplot-nox draws `tg train --log-dir`'s curves; libpng-dev lets the tests decode them; ccache
# makes the test that builds TensorGraph again through add_subdirectory (examples/consumer) cheap.
# The Python package (python/, `make python`) needs python3-dev, pybind11-dev, libdlpack-dev and
# python3-numpy; its tests need python3-pytest, python3-torch as the DLPack, ONNX and
# tensorgraph.torch peer, and python3-torchvision for the models tensorgraph.torch's tests convert.
PACKAGES=(build-essential cmake ninja-build pkg-config ccache libgtest-dev libgmock-dev
          libbenchmark-dev libdnnl-dev libfmt-dev nlohmann-json3-dev libcli11-dev zlib1g-dev
          libprotobuf-dev protobuf-compiler libonnx-dev gnuplot-nox libpng-dev
          python3-dev pybind11-dev libdlpack-dev python3-numpy python3-pytest python3-torch
          python3-torchvision)
# --reliability (make check-reliability, scripts/check-reliability.sh): also clang,
# libclang-rt-dev (libFuzzer and the sanitizer runtimes) and llvm (llvm-symbolizer for sanitizer
# reports), then stop: that check configures its own build.
[ "${1:-}" = "--reliability" ] && PACKAGES+=(clang libclang-rt-dev llvm)
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    echo "bootstrap: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}"
  else
    echo "bootstrap: missing packages (run as root to install): ${missing[*]}" >&2
    exit 1
  fi
fi

[ "${1:-}" = "--reliability" ] && exit 0

BUILD_DIR=${TG_BUILD_DIR:-build}
BUILD_TYPE=${TG_BUILD_TYPE:-Release}
launcher=()
command -v ccache >/dev/null 2>&1 && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE="$BUILD_TYPE" "${launcher[@]}" ${TG_CMAKE_ARGS:-}
fi
targets=()
for t in ${TG_BUILD_TARGET:-}; do targets+=(--target "$t"); done
cmake --build "$BUILD_DIR" --parallel "$(nproc)" "${targets[@]}"
