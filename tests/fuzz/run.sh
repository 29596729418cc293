#!/usr/bin/env bash
# Builds the libFuzzer targets with clang and runs each for a bounded time.
# Usage: bash tests/fuzz/run.sh [SECONDS_PER_TARGET] [BUILD_DIR]
#   SECONDS_PER_TARGET  default 60
#   BUILD_DIR           default build-fuzz under the source root
# Each target starts from its committed seed corpus (tests/fuzz/corpus/<target>, read only)
# and writes new inputs to BUILD_DIR/corpus/<target>. A crash, leak, sanitizer report, or
# an exception other than std::runtime_error leaves its input under BUILD_DIR/artifacts/
# and fails the run. Replay a file with BUILD_DIR/replay_<target> FILE.
set -euo pipefail
seconds="${1:-60}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
build="${2:-$root/build-fuzz}"
jobs="${FUZZ_BUILD_JOBS:-2}"

if ! command -v clang++ >/dev/null; then
  echo "fuzz: clang++ not found (apt-get install -y clang libclang-rt-14-dev)" >&2
  exit 2
fi
if [ ! -f "$build/build.ninja" ]; then
  CC=clang CXX=clang++ cmake -S "$here" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
ninja -C "$build" -j "$jobs" fuzz_onnx_import fuzz_cluster_yaml replay_onnx_import replay_cluster_yaml >/dev/null

export ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=1:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}"
export LSAN_OPTIONS="suppressions=$root/tests/lsan.supp:${LSAN_OPTIONS:-}"

status=0
for target in onnx_import cluster_yaml; do
  seeds="$here/corpus/$target"
  grown="$build/corpus/$target"
  artifacts="$build/artifacts/$target/"
  mkdir -p "$grown" "$artifacts"
  dict=()
  [ -f "$here/$target.dict" ] && dict=(-dict="$here/$target.dict")
  echo "fuzz: $target for ${seconds}s (seeds: $(ls "$seeds" | wc -l))"
  if ! "$build/fuzz_$target" "$grown" "$seeds" "${dict[@]}" -max_total_time="$seconds" -timeout=20 \
      -rss_limit_mb=4096 -max_len=262144 -print_final_stats=1 -artifact_prefix="$artifacts" \
      >"$build/$target.log" 2>&1; then
    echo "fuzz: $target FOUND A PROBLEM; input(s) in $artifacts; log $build/$target.log" >&2
    grep -m 5 -E "ERROR|SUMMARY|terminate|runtime error" "$build/$target.log" >&2 || tail -n 20 "$build/$target.log" >&2
    status=1
  else
    grep -E "stat::number_of_executed_units|stat::peak_rss_mb" "$build/$target.log" | sed "s/^/fuzz: $target /"
  fi
done
exit $status
