#!/usr/bin/env bash
# The zoo's Mixtral MoE layer (capacity-based top-k dispatch, moe_mlp in onnx_models/layers.cc)
# runs in ONNX Runtime and matches a token-by-token numpy reference of the same routing:
# at capacity factor 1 and at 0.5, where the reference must drop tokens.
# Usage: bash moe_routing.sh SYMTENSOR_BINARY SOURCE_ROOT
set -euo pipefail
symtensor="$1"
root="$2"
# shellcheck source=lib/ort_checks.sh
source "$root/tests/scripts/lib/ort_checks.sh"
python=/usr/bin/python3
"$python" -c "import onnx, numpy" 2>/dev/null || { echo "python3 with onnx and numpy is missing" >&2; exit 1; }

for factor in 1.0 0.5; do
  "$symtensor" models mixtral-8x7b-tiny --capacity-factor "$factor" -o "$work/mixtral_$factor.onnx" >/dev/null
  out="$("$python" "$root/tests/scripts/lib/moe_reference.py" "$work/mixtral_$factor.onnx" "$root/scripts/ort/run.js" \
    "$work" "$factor" 2 16)" || fail "capacity factor $factor: $out"
  head -1 <<<"$out"
  dropped="$(echo "$out" | tail -1 | "$python" -c "import json,sys; print(json.load(sys.stdin)['dropped'])")"
  if [ "$factor" = 0.5 ] && [ "$dropped" -eq 0 ]; then fail "capacity factor 0.5 dropped nothing"; fi
done
echo "moe_routing: OK"
