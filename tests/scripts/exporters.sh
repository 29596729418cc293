#!/usr/bin/env bash
# Models as their users export them (tests/scripts/exporters/export_models.py: Debian's
# PyTorch and torchvision, dynamic axes on the inputs only, one static, one whose batch dim
# has another name) compile under symtensor, megatron (where it applies), dp and zero3 on
# 2, 4 and 6 devices with --onnx, and the sharded programs verify in ONNX Runtime (rtol
# 1e-4, atol 1e-5). A strategy that does not apply must say why in one line.
# Usage: bash exporters.sh SYMTENSOR_BINARY SOURCE_ROOT
set -euo pipefail
symtensor="$1"
root="$2"
# shellcheck source=lib/ort_checks.sh
source "$root/tests/scripts/lib/ort_checks.sh"

/usr/bin/python3 "$root/tests/scripts/exporters/export_models.py" "$work/models" >"$work/export.log" 2>&1 \
  || { cat "$work/export.log" >&2; fail "export_models.py failed"; }
[ "$(wc -l <"$work/models/models.txt")" -ge 12 ] || fail "fewer than 12 models exported"

verified=0 refused=0
while read -r name bind kind; do
  model="$work/models/$name.onnx"
  bind_args=()
  [ "$bind" != "-" ] && bind_args=(--bind "$bind")
  strategies="symtensor dp zero3"
  [ "$kind" = text ] && strategies="symtensor megatron dp zero3"
  for strategy in $strategies; do
    for gpus in 2 4 6; do
      dir="$work/out_${name}_${strategy}_$gpus"
      if ! "$symtensor" compile "$model" --cluster dgx-a100 --gpus "$gpus" "${bind_args[@]}" --strategy "$strategy" \
        --onnx -o "$dir" >"$work/compile.log" 2>&1; then
        # A refusal is one line naming why, with no partial output.
        [ "$(grep -c 'symtensor: error:' "$work/compile.log")" -eq 1 ] || { cat "$work/compile.log" >&2; fail "$name $strategy $gpus: no one-line reason"; }
        [ ! -e "$dir" ] || fail "$name $strategy $gpus: partial output left in $dir"
        echo "$name $strategy x$gpus: refused: $(grep 'symtensor: error:' "$work/compile.log" | cut -c18-)"
        refused=$((refused + 1))
        continue
      fi
      "$symtensor" verify "$model" "$dir" --rtol 1e-4 >"$work/verify.log" 2>&1 \
        || { cat "$work/verify.log" >&2; fail "$name $strategy x$gpus: verify failed"; }
      grep -q "verify: OK" "$work/verify.log" || fail "$name $strategy x$gpus: no OK line"
      echo "$name $strategy x$gpus: OK, $(grep -o 'max rel [0-9.e+-]*' "$work/verify.log" | sort -t' ' -k3 -g | tail -1)"
      verified=$((verified + 1))
      rm -rf "$dir"
    done
  done
done <"$work/models/models.txt"
echo "exporters: $verified plans verified, $refused refused with a reason"
