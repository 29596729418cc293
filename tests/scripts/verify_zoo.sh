#!/usr/bin/env bash
# Sharded ONNX out, proven in ONNX Runtime: for zoo tiny models and the PyTorch exports,
# `symtensor shard` writes stage files and emulation.onnx for hand-built pipeline x data x
# tensor(-sequence) parallel plans on 2, 4, 6 and 8 devices, and `symtensor verify` must
# accept them at rtol 1e-4; deliberately wrong shardings (--mutate) must be rejected.
# Usage: bash verify_zoo.sh SYMTENSOR_BINARY SOURCE_ROOT
set -euo pipefail
symtensor="$1"
root="$2"
# shellcheck source=lib/ort_checks.sh
source "$root/tests/scripts/lib/ort_checks.sh"

# model | shard flags (pp dp tp sp) | bindings
cases=(
  "gpt2-small-tiny|--dp 2|batch=4,seq=8"
  "gpt2-small-tiny|--tp 2|batch=2,seq=8"
  "gpt2-small-tiny|--pp 2 --dp 2|batch=4,seq=8"
  "gpt2-small-tiny|--dp 2 --tp 2 --sp|batch=4,seq=8"
  "gpt2-small-tiny|--pp 3 --tp 2|batch=2,seq=8"
  "gpt2-small-tiny|--pp 2 --dp 2 --tp 2 --sp|batch=4,seq=8"
  "llama2-70b-tiny|--tp 2|batch=2,seq=8"
  "llama2-70b-tiny|--dp 2 --tp 2 --sp|batch=2,seq=8"
  "llama2-70b-tiny|--pp 2 --dp 3|batch=6,seq=8"
  "llama2-70b-tiny|--dp 2 --tp 4|batch=2,seq=8"
  "mixtral-8x7b-tiny|--dp 4|batch=4,seq=8"
  "mixtral-8x7b-tiny|--pp 2 --tp 2 --sp|batch=2,seq=8"
  "mixtral-8x7b-tiny|--dp 3 --tp 2|batch=3,seq=8"
  "bert-large-tiny|--tp 2 --sp|batch=2,seq=8"
  "bert-large-tiny|--pp 2 --dp 2 --tp 2|batch=2,seq=8"
  "vit-l16-tiny|--dp 2 --tp 2|batch=2"
  "vit-l16-tiny|--pp 3 --tp 2|batch=2"
  "llava-1.5-7b-tiny|--pp 2 --dp 2|batch=4,seq=8"
  "llava-1.5-7b-tiny|--pp 3 --tp 2|batch=4,seq=8"
  "llava-1.5-7b-tiny|--dp 2 --tp 2 --sp|batch=4,seq=8"  # the sequence cut stops at the Slice that drops the image placeholders
  "deepseek-v3-tiny+mtp|--pp 2 --tp 2|batch=2,seq=8"  # the MTP layer: ids rolled, [enorm; hnorm] concatenated
  "deepseek-v3-tiny+mtp|--dp 2 --tp 2 --sp|batch=2,seq=8"
  "resnet50-tiny|--dp 2|batch=2"
  "resnet50-tiny|--pp 2 --tp 2|batch=2"
  "resnet50-tiny|--dp 4 --tp 2|batch=4"
  "torch:gpt_tiny|--dp 2 --tp 2 --sp|batch=2,seq=8"
  "torch:gpt_tiny|--pp 3 --dp 2|batch=2,seq=6"
  "torch:encoder|--pp 2 --tp 2 --sp|batch=2,seq=8"
  "torch:resnet_tiny|--dp 2 --tp 2|batch=2"
  "torch:squeezenet|--pp 3 --dp 2|batch=2"
)

count=0
for c in "${cases[@]}"; do
  IFS='|' read -r name flags bind <<<"$c"
  model="$(model_file "$name")"
  dir="$work/out_$count"
  # shellcheck disable=SC2086
  "$symtensor" shard "$model" -o "$dir" $flags --bind "$bind" >"$work/shard.log" 2>&1 \
    || { cat "$work/shard.log" >&2; fail "$name $flags: shard failed"; }
  "$symtensor" verify "$model" "$dir" --rtol 1e-4 >"$work/verify.log" 2>&1 \
    || { cat "$work/verify.log" >&2; fail "$name $flags: verify failed"; }
  grep -q "verify: OK" "$work/verify.log" || fail "$name $flags: no OK line"
  echo "$name $flags ($bind): $(grep -o 'max rel [0-9.e+-]*' "$work/verify.log" | sort -t' ' -k3 -g | tail -1)"
  count=$((count + 1))
done
[ "$count" -eq "${#cases[@]}" ] || fail "ran $count of ${#cases[@]} cases"

# The check can fail: wrong shardings written on purpose are rejected.
model="$(model_file gpt2-small-tiny)"
for mutation in drop-all-reduce wrong-weight-slice; do
  "$symtensor" shard "$model" -o "$work/bad_$mutation" --tp 2 --bind batch=2,seq=8 --mutate "$mutation" >/dev/null
  if "$symtensor" verify "$model" "$work/bad_$mutation" >"$work/verify.log" 2>&1; then
    cat "$work/verify.log" >&2
    fail "verify accepted the $mutation mutation"
  fi
  grep -q "differ beyond tolerance" "$work/verify.log" || { cat "$work/verify.log" >&2; fail "$mutation: unexpected failure"; }
  echo "mutation $mutation rejected"
done

# A binding other than the one the files were written for is refused with one line.
if "$symtensor" verify "$model" "$work/out_0" --bind batch=3,seq=8 2>"$work/err.log"; then fail "verify accepted other bindings"; fi
grep -q "differs from the dims" "$work/err.log" || fail "bindings error: $(cat "$work/err.log")"
echo "verified $count sharded models"
