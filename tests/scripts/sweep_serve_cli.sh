#!/usr/bin/env bash
# `symtensor sweep --serve` (#33): per cluster the serving search's answer and its cost per
# million output tokens; the table's figure recomputed from results.csv (GPUs x price /
# (output tokens/s x 3600 / 1e6)); the four report files and no temporary ones; a cluster where
# no layout meets the SLOs says so on its row; bad flags are one-line errors writing nothing.
# Usage: bash sweep_serve_cli.sh SYMTENSOR_BINARY SOURCE_ROOT
set -euo pipefail
symtensor="$1"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
"$symtensor" models llama3-70b -o "$work/m.onnx" >/dev/null

out="$("$symtensor" sweep --serve "$work/m.onnx" --clusters dgx-h100,pcie-l4 --nodes 1 --precision fp8 --rate 2 \
  --slo-ttft 1 --slo-tpot 0.05 --price pcie-l4=0.5 -o "$work/r" 2>/dev/null)"
for f in report.html report.md results.csv results.json; do [ -s "$work/r/$f" ] || fail "no $f"; done
[ "$(ls "$work/r" | wc -l)" = 4 ] || fail "extra files: $(ls "$work/r")"
grep -q "^  dgx-h100 .*aggregated.*(illustrative)" <<<"$out" || fail "no dgx-h100 row: $out"
grep -q "^  pcie-l4 .*no layout meets the SLOs" <<<"$out" || fail "the L4 row does not say no layout meets the SLOs: $out"
# By hand from the CSV: gpus (7), output_tokens_per_s (8), price (13) -> cost per million output tokens (17).
awk -F, '$1 == "dgx-h100" { want = $7 * $13 / ($8 * 3600 / 1e6); got = $17;
  if (want <= 0 || (got - want) / want > 1e-9 || (want - got) / want > 1e-9) { print "cost " got " vs " want; exit 1 } ; found = 1 }
  END { exit !found }' "$work/r/results.csv" || fail "cost per million output tokens off by hand"
grep -q '"price_source": "yours"' "$work/r/results.json" || fail "--price not marked yours"

# errors: one line, non-zero exit, no report folder
for bad in "--slo-tpot 0.05" "--rate 2" "--rate 2 --slo-tpot 0.05 --tokens 1e9" "--rate 2 --slo-tpot 0.05 --price x=1"; do
  # shellcheck disable=SC2086
  if "$symtensor" sweep --serve "$work/m.onnx" --clusters dgx-h100 $bad -o "$work/bad" 2>"$work/err" >/dev/null; then
    fail "accepted: $bad"; fi
  [ "$(wc -l < "$work/err")" = 1 ] || fail "not one line for '$bad': $(cat "$work/err")"
  [ ! -e "$work/bad" ] || fail "wrote a report for '$bad'"
done
echo "sweep_serve_cli: ok"
