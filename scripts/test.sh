#!/usr/bin/env bash
# The whole test suite: install, build (plain and with ASan+UBSan), run every test.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
jobs="$(nproc)"
# Runs a phase and prints its minutes on stderr, so a slow run says where its time went.
phase() {
  local name="$1" start=$SECONDS
  shift
  "$@"
  echo "test.sh: $name took $(((SECONDS - start) / 60)) min $(((SECONDS - start) % 60)) s" >&2
}
phase "install" bash "$root/scripts/install_deps.sh"
phase "build" bash "$root/scripts/build.sh" "$root/build"
phase "ctest" bash -c "cd '$root/build' && ctest --output-on-failure -j '$jobs'"
if [ "${SYMTENSOR_SKIP_SANITIZE:-0}" != 1 ]; then
  # The unit tests again under AddressSanitizer and UndefinedBehaviorSanitizer. The tests that
  # replay published runs (calibration, the MI355X and MoE validations) run in the plain build
  # only: they drive the same import, search and simulation code that the other tests cover
  # under the sanitizers, and under ASan they alone took about 15 of the run's minutes on 2 cores.
  phase "sanitized build" env TARGETS="hardware_tests simulator_tests onnx_models_tests compiler_tests symtensor" \
    bash "$root/scripts/build.sh" "$root/build-asan" -DSYMTENSOR_SANITIZE=ON
  phase "sanitized tests" bash "$root/scripts/run_sharded_tests.sh" "$root/build-asan/tests" "$jobs" \
    '-Calibration.*:Section4c/Mi355xOverB200.*:ValidationMoe.*'
fi
