#!/usr/bin/env bash
# `make check-reliability` (CI runs it after `make test`; docs/reliability.md): a clang build
# with AddressSanitizer + UndefinedBehaviorSanitizer (-fno-sanitize-recover: a report fails) and
# the libFuzzer targets, without OpenMP and CUDA, in $TG_SAN_DIR (default build-san); then the
# fast subset of the suite under the sanitizers (tg_tests_fast: the tests of tests/conformance,
# tests/onnx and tests/autodiff, and the readers' regression tests); then each fuzz target for $TG_FUZZ_SECONDS seconds
# (default 45) on its seed corpus (scripts/fuzz.sh). Prints the time of each phase.
set -euo pipefail
cd "$(dirname "$0")/.."
B=${TG_SAN_DIR:-build-san}
SECS=${TG_FUZZ_SECONDS:-45}
t0=$(date +%s)
launcher=()
command -v ccache >/dev/null 2>&1 && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
if [ ! -f "$B/build.ninja" ]; then
  cmake -S . -B "$B" -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_COMPILER=clang \
    -DCMAKE_BUILD_TYPE=Sanitize "-DCMAKE_CXX_FLAGS_SANITIZE=-O1 -gline-tables-only -fno-sanitize-recover=all" \
    -DTG_SANITIZE=address,undefined -DTG_BUILD_FUZZ=ON -DTG_OPENMP=OFF -DTG_BUILD_CUDA=OFF \
    -DTG_BUILD_BENCH=OFF -DTG_BUILD_EXAMPLES=OFF -DTG_INSTALL=OFF "${launcher[@]}" >/dev/null
fi
cmake --build "$B" --parallel "$(nproc)" --target tg_tests_fast tg_cli tg_fuzz
t1=$(date +%s)
# tg_tests_fast: the tests of tests/conformance, tests/onnx and tests/autodiff, and the readers'
# regression tests (tests/CMakeLists.txt); the ONNX CLI tests run the sanitized tg.
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1} \
  "$B/tests/tg_tests_fast" --gtest_brief=1 --gtest_filter=-GradCheckCoverage.*  # (the control-flow checks are not in it)
t2=$(date +%s)
TG_FUZZ_JOBS=${TG_FUZZ_JOBS:-2} scripts/fuzz.sh "$B" "$SECS"  # two targets at a time: the 2 cores
t3=$(date +%s)
echo "check-reliability: build $((t1 - t0)) s, sanitizer tests $((t2 - t1)) s, fuzzing $((t3 - t2)) s, total $((t3 - t0)) s"
