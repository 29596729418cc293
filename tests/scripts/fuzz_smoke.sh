#!/usr/bin/env bash
# Fuzz smoke test: builds the libFuzzer targets (tests/fuzz) with clang and runs each for
# FUZZ_SECONDS (default 30) from the committed corpus.
# Usage: bash fuzz_smoke.sh SYMTENSOR_BINARY SOURCE_ROOT
# clang and libFuzzer come from scripts/install_deps.sh; without them the test fails.
set -euo pipefail
symtensor="$1"
root="$2"
if ! command -v clang++ >/dev/null || ! ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1; then
  echo "fuzz_smoke: clang/libFuzzer missing (run scripts/install_deps.sh: clang libclang-rt-14-dev)" >&2
  exit 1
fi
# Next to the binary's build folder, so repeated runs reuse the build and grown corpus.
build="$(cd "$(dirname "$symtensor")" && pwd)/fuzz"
bash "$root/tests/fuzz/run.sh" "${FUZZ_SECONDS:-30}" "$build"
echo "fuzz_smoke: OK"
