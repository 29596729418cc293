#!/usr/bin/env bash
# Configures and builds into build/ (or the folder given as $1, extra CMake args after it;
# set TARGETS to build only some targets).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dir="${1:-$root/build}"; shift || true
cmake -S "$root" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
# shellcheck disable=SC2086
cmake --build "$dir" ${TARGETS:+--target $TARGETS}
