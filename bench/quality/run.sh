#!/usr/bin/env bash
# The strategy-quality benchmark in one command:
#   bash bench/quality/run.sh [BUILD_DIR] [OUT_DIR] [extra symtensor-quality options]
# Builds symtensor-quality (ninja -j2) and runs the whole suite; the tables land in
# OUT_DIR (default BUILD_DIR/quality): quality.md (for README.md) and quality.csv.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${1:-$root/build}"
out="${2:-$build/quality}"
shift $(( $# < 2 ? $# : 2 ))
if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
ninja -C "$build" -j 2 symtensor-quality >/dev/null
"$build/bench/symtensor-quality" "$root/bench/quality/suite.yaml" "$out" "$@"
