#!/usr/bin/env bash
# Runs every GoogleTest binary in a folder as JOBS shards, one process per shard, under the
# sanitizers' options. Not one process per test as ctest does: an ASan test binary takes
# 0.5-0.9 s to start (it maps and relocates 170 MB), which over ~1,000 tests was half of
# the sanitized run's 10 minutes on 2 cores.
# Usage: run_sharded_tests.sh TEST_DIR JOBS [GTEST_FILTER]
set -euo pipefail
dir="$1"; jobs="$2"; filter="${3:-*}"
root="$(cd "$(dirname "$0")/.." && pwd)"
export ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1
export LSAN_OPTIONS="suppressions=$root/tests/lsan.supp:print_suppressions=0"
logs="$(mktemp -d)"
trap 'rm -rf "$logs"' EXIT
cd "$dir"  # where ctest would run them
passed=0; failed=0
for binary in ./*_tests; do
  name="$(basename "$binary")"
  pids=()
  for ((shard = 0; shard < jobs; shard++)); do
    # A shard that hangs is stopped, as ctest's default timeout would stop a test.
    GTEST_TOTAL_SHARDS="$jobs" GTEST_SHARD_INDEX="$shard" timeout 1500 "$binary" \
      --gtest_brief=1 --gtest_filter="$filter" >"$logs/$name.$shard" 2>&1 &
    pids+=($!)
  done
  for ((shard = 0; shard < jobs; shard++)); do
    log="$logs/$name.$shard"
    if wait "${pids[$shard]}"; then
      n="$(sed -n 's/^\[  PASSED  \] \([0-9]*\) tests\?\.$/\1/p' "$log")"
      passed=$((passed + ${n:-0}))
    else
      echo "$name shard $shard of $jobs failed (exit $?):"
      cat "$log"
      failed=$((failed + 1))
    fi
  done
done
echo "sanitized unit tests: $passed passed in $(ls ./*_tests | wc -l) binaries x $jobs shards, $failed shards failed"
[ "$failed" = 0 ]
