#!/usr/bin/env bash
# `symtensor compile`: end to end with each fixed strategy, plan.yaml read back, and the
# error messages for bad input (no partial files left behind).
# Usage: bash compile_cli.sh SYMTENSOR_BINARY SOURCE_ROOT
set -euo pipefail
symtensor="$1"
work="$(mktemp -d)"
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$symtensor" models gpt2-small-tiny -o "$work/gpt.onnx" >/dev/null
"$symtensor" models llama2-70b-tiny -o "$work/llama.onnx" >/dev/null
"$symtensor" models gpt3-175b -o "$work/gpt3.onnx" >/dev/null   # weight-free
bind="--bind batch=16,seq=32"

# dp: summary table and plan.yaml
out="$("$symtensor" compile "$work/gpt.onnx" --cluster dgx-a100 --nodes 1 --gpus 4 $bind --strategy dp -o "$work/dp")"
for key in strategy mesh "step time" throughput MFU "stage 0"; do
  grep -q "$key" <<<"$out" || fail "dp summary lacks '$key': $out"
done
[ -s "$work/dp/plan.yaml" ] || fail "dp: no plan.yaml"
[ ! -e "$work/dp/plan.yaml.tmp" ] || fail "dp: temporary file left behind"
grep -q '^strategy: dp' "$work/dp/plan.yaml" || fail "dp: plan.yaml lacks the strategy"
grep -q '^predicted:' "$work/dp/plan.yaml" || fail "dp: plan.yaml lacks the prediction"

# megatron with knobs, into a directory that does not exist yet; deterministic output
"$symtensor" compile "$work/llama.onnx" --cluster dgx-a100 --nodes 2 --gpus 4 $bind \
  --megatron tp=2,pp=2,sp=1,recompute=selective -o "$work/m/deep" >/dev/null
grep -q '^sequence_parallel: true' "$work/m/deep/plan.yaml" || fail "megatron: sp not recorded"
"$symtensor" compile "$work/llama.onnx" --cluster dgx-a100 --nodes 2 --gpus 4 $bind \
  --megatron tp=2,pp=2,sp=1,recompute=selective -o "$work/m2" >/dev/null
cmp -s "$work/m/deep/plan.yaml" "$work/m2/plan.yaml" || fail "megatron: plan.yaml differs between two runs"

# --stack: recorded in plan.yaml (megatron by default); DeepSpeed keeps 16 bytes per parameter
# of model states where Megatron-LM keeps 18 (fp32 main gradients); an unknown stack is refused
grep -q '^stack: megatron' "$work/dp/plan.yaml" || fail "plan.yaml lacks the default stack"
"$symtensor" compile "$work/gpt.onnx" --cluster dgx-a100 --nodes 1 --gpus 4 $bind --strategy dp --stack deepspeed \
  -o "$work/ds" >"$work/ds.log"
grep -q '^stack: deepspeed' "$work/ds/plan.yaml" || fail "--stack deepspeed not recorded"
"$symtensor" compile "$work/gpt.onnx" --cluster dgx-a100 --nodes 1 --gpus 4 $bind --strategy dp -o "$work/mg" >"$work/mg.log"
grads() { grep -m1 '^    gradients' "$1" | awk '{print $2, $3}'; }
[ "$(grads "$work/ds.log")" != "$(grads "$work/mg.log")" ] || fail "--stack deepspeed keeps Megatron's gradients: $(grads "$work/ds.log")"
if "$symtensor" compile "$work/gpt.onnx" --cluster dgx-a100 --nodes 1 --gpus 4 $bind --stack megatorn -o "$work/e0" 2>"$work/e0.err"; then
  fail "an unknown stack was accepted"
fi
grep -q "unknown stack 'megatorn': did you mean 'megatron'? (bundled: deepspeed, jax, megatron, nemo, torchtitan" "$work/e0.err" || fail "stack error: $(cat "$work/e0.err")"
[ ! -e "$work/e0/plan.yaml" ] || fail "unknown stack: partial output"

# the default strategy is the SymTensor search; --onnx adds the sharded program
out="$("$symtensor" compile "$work/gpt.onnx" --cluster dgx-a100 --nodes 1 --gpus 4 $bind -o "$work/sym" --onnx)"
grep -q "^strategy *symtensor" <<<"$out" || fail "default strategy is not symtensor: $out"
grep -q '^strategy: symtensor' "$work/sym/plan.yaml" || fail "symtensor: plan.yaml lacks the strategy"
for f in emulation.onnx manifest.json stage_0.onnx; do
  grep -q "^${f%.onnx}" <<<"$(ls "$work/sym")" || fail "--onnx: no $f in $(ls "$work/sym")"
done
# --allow-oom writes a plan that does not fit, and says so
"$symtensor" compile "$work/gpt3.onnx" --cluster pcie-l4 --gpus 1 --bind batch=8,seq=2048 --strategy dp \
  --allow-oom -o "$work/oom" >/dev/null 2>"$work/oom.err" || fail "--allow-oom failed"
grep -q "does not fit" "$work/oom.err" || fail "--allow-oom: no warning"
grep -q "fits: false" "$work/oom/plan.yaml" || fail "--allow-oom: plan.yaml does not say it does not fit"

# zero3 and the plan read back: same plan, same prediction
"$symtensor" compile "$work/gpt.onnx" --cluster dgx-a100 --nodes 1 --gpus 4 $bind --strategy zero3 -o "$work/z" >/dev/null
"$symtensor" compile "$work/gpt.onnx" --cluster dgx-a100 --nodes 1 --gpus 4 $bind --plan "$work/z/plan.yaml" -o "$work/z2" >/dev/null
cmp -s "$work/z/plan.yaml" "$work/z2/plan.yaml" || fail "--plan: plan.yaml not reproduced byte for byte"

expect_error() {  # expect_error PATTERN ARGS...
  local pattern="$1"; shift
  local err
  if err="$("$symtensor" "$@" 2>&1)"; then fail "expected failure: $*"; fi
  grep -q -- "$pattern" <<<"$err" || fail "'$*' said: $err"
}
common=("$work/gpt.onnx" $bind)
expect_error "no-such-cluster" compile "${common[@]}" --cluster no-such-cluster -o "$work/e1"
expect_error "unknown knob 'tq'" compile "${common[@]}" --cluster dgx-a100 --megatron tq=2 -o "$work/e2"
expect_error "tp=zero" compile "${common[@]}" --cluster dgx-a100 --megatron tp=zero -o "$work/e3"
expect_error "attention heads" compile "${common[@]}" --cluster dgx-a100 --nodes 1 --megatron tp=8 -o "$work/e4"
expect_error "must divide the 8 GPUs per node" compile "${common[@]}" --cluster dgx-a100 --megatron tp=3 -o "$work/e5"
expect_error "unknown strategy 'best'" compile "${common[@]}" --cluster dgx-a100 --strategy best -o "$work/e6"
# a model that fits no plan on one small GPU: the error names the need and the capacity
expect_error "does not fit: .* per device at least, .* available on pcie-l4; about [0-9]* devices" \
  compile "$work/gpt3.onnx" --cluster pcie-l4 --gpus 1 --bind batch=8,seq=2048 --strategy dp -o "$work/e7"
expect_error "--bind" compile "$work/gpt.onnx" --cluster dgx-a100 --nodes 1 --gpus 4 -o "$work/e8"
for e in e1 e2 e3 e4 e5 e6 e7 e8; do  # e7: fits nowhere
  [ ! -e "$work/$e/plan.yaml" ] && [ ! -e "$work/$e/plan.yaml.tmp" ] || fail "$e: partial output left behind"
done
# an output directory that cannot be created or written
touch "$work/file"
expect_error "cannot create the output folder" compile "${common[@]}" --cluster dgx-a100 --nodes 1 --gpus 4 -o "$work/file/sub"
mkdir "$work/ro" && chmod a-w "$work/ro"
if [ "$(id -u)" != 0 ]; then
  expect_error "ro/plan.yaml" compile "${common[@]}" --cluster dgx-a100 --nodes 1 --gpus 4 -o "$work/ro"
  [ -z "$(ls -A "$work/ro")" ] || fail "unwritable dir: partial files left behind"
fi
# GPT-3's vocabulary (50257) at tp=4: padded to 50688 as Megatron-LM pads it (#30), recorded
# in plan.yaml, read back as written, exported with its padding rule; no ONNX rewrite of it
"$symtensor" models gpt3-175b --layers 2 -o "$work/gpt3_2.onnx" >/dev/null
gpt3_tp4=("$work/gpt3_2.onnx" --cluster dgx-a100 --nodes 1 --bind batch=8,seq=2048 --megatron tp=4,pp=1,mb=1)
"$symtensor" compile "${gpt3_tp4[@]}" --export megatron -o "$work/v" >/dev/null
grep -q 'padded: {n: 50688}' "$work/v/plan.yaml" || fail "padded vocabulary not in plan.yaml"
grep -qx -- '--make-vocab-size-divisible-by 128' "$work/v/megatron.args" || fail "export lacks the padding rule"
grep -qx -- '# vocabulary 50257 padded to 50688 (a multiple of 128 x tp=4), as the plan is priced' "$work/v/megatron.args" \
  || fail "export lacks the padded vocabulary: $(grep vocabulary "$work/v/megatron.args")"
"$symtensor" compile "$work/gpt3_2.onnx" --cluster dgx-a100 --nodes 1 --bind batch=8,seq=2048 --plan "$work/v/plan.yaml" -o "$work/v2" >/dev/null
cmp -s <(grep -v '^model:\|^strategy:' "$work/v/plan.yaml") <(grep -v '^model:\|^strategy:' "$work/v2/plan.yaml") \
  || fail "padded plan.yaml not reproduced: $(diff "$work/v/plan.yaml" "$work/v2/plan.yaml" | head -5)"
expect_error "pads loop '[a-z0-9]*' to 50688 (Megatron's padded vocabulary); the ONNX rewrite" compile "${gpt3_tp4[@]}" --onnx -o "$work/v3"
# a hand-edited plan with a bad key names the file, line and key
sed 's/^zero_stage: 3/zero_stage: 9/' "$work/z/plan.yaml" > "$work/bad.yaml"
expect_error "bad.yaml:[0-9]*: key 'zero_stage'" compile "${common[@]}" --cluster dgx-a100 --nodes 1 --gpus 4 --plan "$work/bad.yaml" -o "$work/e9"
# --stack T (or --export T) bounds the search (#30): the plan is one T runs as written, so its
# export says exact; --unbounded searches every plan, T's among them (never slower)
for t in megatron nemo torchtitan deepspeed jax; do
  out="$("$symtensor" compile "$work/llama.onnx" --cluster dgx-a100 --nodes 1 --gpus 4 $bind --stack $t --export $t -o "$work/b_$t")"
  grep -q "^search *inside $t: the fastest plan it runs as written" <<<"$out" || fail "--stack $t: no bound said: $out"
  grep -q "^expressed *exact" <<<"$out" || fail "--stack $t: the bounded plan is not exact on $t: $out"
done
out="$("$symtensor" compile "$work/llama.onnx" --cluster dgx-a100 --nodes 1 --gpus 4 $bind --stack deepspeed --export deepspeed \
  --unbounded -o "$work/b_u")"
! grep -q "^search" <<<"$out" || fail "--unbounded still bounded: $out"
secs() { awk '/^step time/ { u = $4; f = u == "s" ? 1 : u == "ms" ? 1e-3 : u == "us" ? 1e-6 : u == "ns" ? 1e-9 : -1; print $3 * f }' <<<"$1"; }
bounded="$(secs "$("$symtensor" compile "$work/llama.onnx" --cluster dgx-a100 --nodes 1 --gpus 4 $bind --stack deepspeed -o "$work/b_b")")"
unbounded="$(secs "$out")"
awk -v b="$bounded" -v u="$unbounded" 'BEGIN { exit !(u > 0 && b > 0 && u <= b) }' || fail "unbounded $unbounded s, bounded $bounded s"
# sweep, fit and compare take the same bound from --stack, and --unbounded (#30)
cl4="--cluster dgx-a100 --nodes 1 --gpus 4"
for cmd in "sweep $work/llama.onnx --clusters dgx-a100 --gpus 4 $bind --jobs 1 -o $work/sw" "fit $work/llama.onnx $cl4 $bind --only sequence" \
           "compare $work/llama.onnx $cl4 $bind --strategies symtensor --no-simulate -o $work/cmp"; do
  # shellcheck disable=SC2086
  out="$("$symtensor" $cmd --stack torchtitan 2>/dev/null)"
  grep -Eq "^search:? +inside torchtitan: the fastest plan it runs as written" <<<"$out" || fail "${cmd%% *} --stack: no bound said: $out"
  # shellcheck disable=SC2086
  out="$("$symtensor" $cmd --stack torchtitan --unbounded 2>/dev/null)"
  ! grep -q "inside torchtitan" <<<"$out" || fail "${cmd%% *} --unbounded still bounded: $out"
  # shellcheck disable=SC2086
  out="$("$symtensor" $cmd 2>/dev/null)"
  ! grep -q "^search" <<<"$out" || fail "${cmd%% *} without --stack is bounded: $out"
done

echo "compile_cli: OK"
