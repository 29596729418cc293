#!/usr/bin/env bash
# Models with external data: a 3.2 GB one (one sparse side file) plans without reading its
# weights (peak memory of `compile` stays small), and a small one with a file per tensor is
# written sharded with its real weights and verifies in ONNX Runtime.
# Usage: bash external_data.sh SYMTENSOR_BINARY SOURCE_ROOT
set -euo pipefail
symtensor="$1"
root="$2"
# shellcheck source=lib/ort_checks.sh
source "$root/tests/scripts/lib/ort_checks.sh"

/usr/bin/python3 "$root/tests/scripts/exporters/external_data.py" "$work" || fail "external_data.py failed"
[ "$(stat -c %s "$work/big.onnx_data")" -gt 2147483648 ] || fail "the big model's data is not past 2 GB"
# Peak resident memory of planning the big model, in KiB (GNU time's %M; bash's TIMEFORMAT has none).
/usr/bin/env time -f "%M" -o "$work/rss" "$symtensor" compile "$work/big.onnx" --cluster dgx-a100 --gpus 8 \
  --bind batch=64 --strategy dp -o "$work/big_plan" >"$work/big.log" 2>&1 || { cat "$work/big.log" >&2; fail "planning the big model failed"; }
rss_kib="$(tail -1 "$work/rss")"
echo "big.onnx (3.2 GB of weights outside the file): planned with a peak of $((rss_kib / 1024)) MiB resident"
[ "$rss_kib" -lt $((512 * 1024)) ] || fail "planning read the weights: peak $rss_kib KiB"

for strategy in symtensor dp zero3; do
  "$symtensor" compile "$work/small.onnx" --cluster dgx-a100 --gpus 4 --bind batch=8 --strategy "$strategy" --onnx \
    -o "$work/small_$strategy" >"$work/small.log" 2>&1 || { cat "$work/small.log" >&2; fail "small $strategy: compile failed"; }
  "$symtensor" verify "$work/small.onnx" "$work/small_$strategy" >"$work/verify.log" 2>&1 \
    || { cat "$work/verify.log" >&2; fail "small $strategy: verify failed"; }
  grep -q "verify: OK" "$work/verify.log" || fail "small $strategy: no OK line"
  echo "small.onnx (a file per tensor) under $strategy on 4 GPUs: verify OK"
done
