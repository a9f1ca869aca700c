#!/usr/bin/env bash
# Runs the libFuzzer targets of a TG_BUILD_FUZZ build (fuzz/, docs/reliability.md), one after the
# other, each for SECONDS seconds of fuzzing (default 60) or RUNS executions, on seed corpora
# written at run time: tg_fuzz_seeds' files, the committed reproducers of fixed bugs
# (fuzz/regressions/<target>), and for the ONNX targets ../shared/onnx/node-tests read in place.
# New inputs libFuzzer finds go to <build>/fuzz-corpus/<target> (kept between runs).
# Exit status 1 when a target reports a crash, leak, timeout, sanitizer report or allocation
# over the limit (its reproducer is <build>/fuzz-artifacts/<target>-crash-*).
# Usage: scripts/fuzz.sh [build-dir (default build-san)] [seconds per target] [targets...]
# Environment: TG_FUZZ_RUNS (stop after this many executions instead; -1 = none),
#              TG_FUZZ_JOBS (targets run at once, default 1), TG_FUZZ_NICE (default 0),
#              TG_FUZZ_LOGS (the logs' directory, default <build>/fuzz-logs),
#              TG_FUZZ_TIMEOUT (seconds one input may take, default 10; more for a starved
#              nice-19 run, where wall-clock time is not the input's), TG_FUZZ_SEED (libFuzzer's
#              -seed; default 0: random. With TG_FUZZ_RUNS too, a run explores the same inputs on
#              any machine: what CI does).
set -uo pipefail
cd "$(dirname "$0")/.."
B=${1:-build-san}
SECS=${2:-60}
shift $(( $# < 2 ? $# : 2 ))
TARGETS=("$@")
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=(fuzz_onnx_import fuzz_tensor_proto fuzz_npy fuzz_safetensors fuzz_mnist fuzz_cifar10 fuzz_tgx_load)
RUNS=${TG_FUZZ_RUNS:--1}
JOBS=${TG_FUZZ_JOBS:-1}
NICE=${TG_FUZZ_NICE:-0}
NODE=../shared/onnx/node-tests
[ -x "$B/fuzz/tg_fuzz_seeds" ] || { echo "fuzz.sh: $B/fuzz/tg_fuzz_seeds missing (build target tg_fuzz of a -DTG_BUILD_FUZZ=ON build)" >&2; exit 2; }
seeds=$(mktemp -d "$B/fuzz-seeds.XXXXXX")
trap 'rm -rf "$seeds"' EXIT
"$B/fuzz/tg_fuzz_seeds" "$seeds" || exit 2
# fuzz_tgx_load saves its seed executables itself (it links the whole library, tg_fuzz_seeds does not).
if [ -x "$B/fuzz/fuzz_tgx_load" ]; then
  TG_FUZZ_TGX_SEEDS="$seeds/fuzz_tgx_load" "$B/fuzz/fuzz_tgx_load" -runs=0 > /dev/null 2>&1 || exit 2
fi
LOGS=${TG_FUZZ_LOGS:-$B/fuzz-logs}
# The ONNX targets read the node tests in place (libFuzzer reads corpus directories recursively,
# and writes new inputs only to the first one): models and .pb tensors seed both targets.
[ -d "$NODE" ] || echo "fuzz.sh: $NODE not found: the ONNX targets start from the committed reproducers only" >&2
mkdir -p "$B/fuzz-artifacts" "$LOGS"
run_one() {
  local t=$1 corpus="$B/fuzz-corpus/$1" start end status
  mkdir -p "$corpus"
  local dirs=("$corpus")
  [ -d "$seeds/$t" ] && dirs+=("$seeds/$t")
  case $t in fuzz_onnx_import|fuzz_tensor_proto) [ -d "$NODE" ] && dirs+=("$NODE") ;; esac
  [ -d "fuzz/regressions/$t" ] && dirs+=("fuzz/regressions/$t")
  start=$(date +%s)
  # -rss_limit_mb/-malloc_limit_mb: an allocation over 2 GiB is reported (declared sizes must be
  # checked against the file before allocating). -timeout: an input taking over 10 s is a hang.
  ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=0} \
  UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
  nice -n "$NICE" "$B/fuzz/$t" -max_total_time="$SECS" -runs="$RUNS" -rss_limit_mb=2560 -malloc_limit_mb=2048 \
    -timeout="${TG_FUZZ_TIMEOUT:-10}" -max_len=65536 -print_final_stats=1 -seed="${TG_FUZZ_SEED:-0}" \
    -artifact_prefix="$B/fuzz-artifacts/$t-" "${dirs[@]}" > "$LOGS/$t.log" 2>&1
  status=$?
  end=$(date +%s)
  local execs
  execs=$(grep -a "stat::number_of_executed_units" "$LOGS/$t.log" | awk '{print $2}')
  printf 'fuzz.sh: %-18s %s executions in %s s, status %s%s\n' "$t" "${execs:-?}" $((end - start)) "$status" \
    "$([ "$status" = 0 ] || echo " (see $LOGS/$t.log)")"
  return $status
}
failed=0
running=0
for t in "${TARGETS[@]}"; do
  [ -x "$B/fuzz/$t" ] || { echo "fuzz.sh: $B/fuzz/$t missing" >&2; failed=1; continue; }
  run_one "$t" &
  running=$((running + 1))
  if [ "$running" -ge "$JOBS" ]; then wait -n || failed=1; running=$((running - 1)); fi
done
while [ "$running" -gt 0 ]; do wait -n || failed=1; running=$((running - 1)); done
if [ "$failed" != 0 ]; then
  for t in "${TARGETS[@]}"; do
    [ -f "$LOGS/$t.log" ] && grep -aq -E "ERROR: (libFuzzer|AddressSanitizer|UndefinedBehaviorSanitizer)|SUMMARY:|runtime error" "$LOGS/$t.log" && \
      { echo "---- $t"; grep -a -A30 -m1 -E "==ERROR|runtime error|ERROR: libFuzzer" "$LOGS/$t.log" | head -40; }
  done
fi
exit $failed
