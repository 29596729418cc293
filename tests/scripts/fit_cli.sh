#!/usr/bin/env bash
# `symtensor fit` agrees with `compile`: the answered largest micro-batch fits (compile with
# its knobs succeeds) and one more sample fits with none of the layouts fit searched; the
# longest sequence fits and 64 tokens more does not; the fewest devices fit and the size
# below does not.
# Usage: bash fit_cli.sh SYMTENSOR_BINARY SOURCE_ROOT
set -euo pipefail
symtensor="$1"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
"$symtensor" models gpt --layers 4 --hidden 2048 --heads 16 --vocab 32000 -o "$work/g.onnx" >/dev/null
cl="--cluster dgx-a100 --nodes 1 --gpus 2"

# micro-batch
out="$("$symtensor" fit "$work/g.onnx" $cl --bind batch=8,seq=2048 --only micro-batch 2>/dev/null)"
mb="$(echo "$out" | awk '$1 == "micro-batch" {print $2}')"
knobs="$(sed -n 's/.*(--megatron \([^)]*\)).*/\1/p' <<<"$out")"; knobs="${knobs%%$'\n'*}"
# named by its degrees, as the other answers (tp, dp, pp, cp), its knobs beside them
grep -Eq "^micro-batch.*\[megatron tp=[0-9]+ dp=[0-9]+ pp=[0-9]+ cp=[0-9]+ " <<<"$out" \
  || fail "the micro-batch answer is not named by its degrees: $out"
next="$(echo "$out" | awk '/does not fit/ {print $1}')"
[ -n "$mb" ] && [ -n "$knobs" ] || fail "no micro-batch answer: $out"
# the answer's throughput in tokens (the model binds a sequence) and its MFU
grep -Eq "^micro-batch.*per step, [0-9.]+ [kKMGT]?tokens/s, MFU [0-9.]+ ?%" <<<"$out" \
  || fail "the answer does not state tokens/s and MFU: $out"
[ "$next" = "$((mb + 1))" ] || fail "the next micro-batch is $next, not $((mb + 1)): $out"
tp="$(echo "$knobs" | sed -n 's/.*tp=\([0-9]*\).*/\1/p')"; pp="$(echo "$knobs" | sed -n 's/.*pp=\([0-9]*\).*/\1/p')"
dp=$((2 / (tp * pp)))
"$symtensor" compile "$work/g.onnx" $cl --bind batch=$((mb * dp * pp)),seq=2048 --megatron "$knobs" -o "$work/fits" >/dev/null \
  || fail "compile says the answered micro-batch $mb ($knobs) does not fit"
# one more sample: the most frugal layouts of every (tp, pp) do not fit either
for tp in 1 2; do for pp in 1 2; do
  [ $((tp * pp)) -le 2 ] || continue
  dp=$((2 / (tp * pp))); sp=$([ $tp -gt 1 ] && echo 1 || echo 0); d=$([ $dp -gt 1 ] && echo 1 || echo 0)
  if "$symtensor" compile "$work/g.onnx" $cl --bind batch=$(((mb + 1) * dp * pp)),seq=2048 \
       --megatron tp=$tp,pp=$pp,mb=$((mb + 1)),sp=$sp,recompute=full,distopt=$d -o "$work/nofit" >/dev/null 2>"$work/err"; then
    fail "micro-batch $((mb + 1)) fits with tp=$tp,pp=$pp, but fit said $mb is the largest"
  fi
  grep -q "does not fit" "$work/err" || fail "unexpected error: $(cat "$work/err")"
done; done

# sequence (the SymTensor search plans each)
out="$("$symtensor" fit "$work/g.onnx" $cl --bind batch=8,seq=2048 --only sequence 2>/dev/null)"
seq="$(echo "$out" | awk '$1 == "sequence" {print $2}')"
next="$(echo "$out" | awk '/does not fit/ {print $1}')"
[ -n "$seq" ] && [ "$next" = "$((seq + 64))" ] || fail "sequence answer: $out"
"$symtensor" compile "$work/g.onnx" $cl --bind batch=8,seq=$seq -o "$work/sfit" >/dev/null || fail "sequence $seq does not compile"
if "$symtensor" compile "$work/g.onnx" $cl --bind batch=8,seq=$next -o "$work/snofit" >/dev/null 2>"$work/err"; then
  fail "sequence $next fits, but fit said $seq is the longest"; fi
grep -q "does not fit" "$work/err" || fail "unexpected error: $(cat "$work/err")"

# devices: a 4.8B-parameter GPT needs more than one A100 (16 bytes of model state per parameter)
"$symtensor" models gpt --layers 24 --hidden 4096 --heads 32 --vocab 32000 -o "$work/g.onnx" >/dev/null
out="$("$symtensor" fit "$work/g.onnx" --cluster dgx-a100 --bind batch=64,seq=4096 --only devices 2>/dev/null)"
n="$(echo "$out" | awk '$1 == "devices" {print $2}')"
below="$(echo "$out" | awk '/does not fit/ {print $1}')"
[ -n "$n" ] && [ -n "$below" ] || fail "devices answer: $out"
[ "$n" -gt 1 ] || fail "the test model fits one GPU; make it bigger: $out"
gpus_of() { if [ "$1" -le 8 ]; then echo "--nodes 1 --gpus $1"; else echo "--nodes $(($1 / 8)) --gpus 8"; fi; }
"$symtensor" compile "$work/g.onnx" --cluster dgx-a100 $(gpus_of "$n") --bind batch=64,seq=4096 -o "$work/dfit" >/dev/null \
  || fail "$n devices do not compile"
if "$symtensor" compile "$work/g.onnx" --cluster dgx-a100 $(gpus_of "$below") --bind batch=64,seq=4096 -o "$work/dno" >/dev/null 2>&1; then
  fail "$below devices fit, but fit said $n is the fewest"; fi

if err="$("$symtensor" fit "$work/g.onnx" $cl --bind batch=8 --only memory 2>&1)"; then fail "--only memory accepted"; fi
grep -q "^symtensor: error: --only: expected micro-batch, sequence or devices" <<<"$err" || fail "bad --only said: $err"
echo "fit_cli: ok"
