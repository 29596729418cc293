#!/usr/bin/env bash
# Mixed fleets (#32) on the command line: compile and simulate with --cluster a+b, the plan
# read back, the export of a heterogeneous plan (not expressible; the nearest homogeneous plan
# written), and one-line errors naming the bad part of a fleet.
# Usage: bash fleet_cli.sh SYMTENSOR_BINARY SOURCE_ROOT
set -euo pipefail
symtensor="$1"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
"$symtensor" models llama2-7b --layers 16 --seq 2048 -o "$work/l.onnx" >/dev/null
fleet="--cluster dgx-h100x1+dgx-a100x2"
bind="--bind batch=96,seq=2048"

out="$("$symtensor" compile "$work/l.onnx" $fleet $bind -o "$work/c" --export megatron)"
for key in "mixed fleet dgx-h100x1+dgx-a100x2" "group 1: H100-SXM5-80GB x8" "group 2: A100-SXM4-80GB x16" \
           "Megatron-best (a)" "Megatron-best (b)" "speedup over Megatron-best" "ceiling: 1.51x" \
           "batch shares by speed (dgx-h100: 16 samples per replica, dgx-a100: 4" \
           "4 / 1 micro-batches per replica by group of 4 samples" "heterogeneous plan" "nearest step time"; do
  grep -qF "$key" <<<"$out" || fail "compile on a fleet lacks '$key': $out"
done
grep -q '^cluster: dgx-h100x1+dgx-a100x2' "$work/c/plan.yaml" || fail "plan.yaml does not name the fleet"
grep -q '^# NOT SymTensor' "$work/c/megatron.args" || fail "megatron.args does not say it is the nearest plan"
[ -s "$work/c/megatron.args.nearest.yaml" ] || fail "no nearest plan written"
speedup="$(echo "$out" | sed -n 's/.*speedup over Megatron-best: \([0-9.]*\)x/\1/p')"
awk -v s="$speedup" 'BEGIN { exit !(s >= 1.0) }' || fail "slower than Megatron-best: ${speedup}x"

# The plan simulates on the fleet again, at the step compile reported.
sim="$("$symtensor" simulate "$work/l.onnx" $fleet $bind --plan "$work/c/plan.yaml")"
step_compile="$(echo "$out" | sed -n 's/^  SymTensor: \([0-9.]*\) s.*/\1/p')"
step_sim="$(echo "$sim" | sed -n 's/^step time: \([0-9.]*\) ms/\1/p')"
[ -n "$step_sim" ] || fail "simulate printed no step time in ms: $sim"
awk -v a="$step_compile" -v b="$step_sim" 'BEGIN { d = a * 1000 - b; exit !(d < 1 && d > -1) }' ||
  fail "simulate gives $step_sim ms, compile $step_compile s"
# Each stage's memory beside its own GPUs' (the H100's and the A100's usable memory differ): the
# header named the fleet's least for every stage.
grep -q "^memory per stage (each against its own GPUs' capacity):" <<<"$sim" || fail "simulate names one capacity for the fleet: $sim"
[ "$(grep -o ' of [0-9.]* GiB$' <<<"$sim" | sort -u | wc -l)" -ge 2 ] || fail "simulate's stages do not name their own GPUs' memory: $sim"
out="$("$symtensor" simulate "$work/l.onnx" $fleet $bind --strategy megatron)" || fail "megatron on a fleet"
grep -q "step time" <<<"$out" || fail "megatron on a fleet"

# compare on the fleet: the symtensor row is the fleet plan, the megatron row Megatron-best, the
# report shows the groups and their stages; --no-simulate still simulates a fleet (the analytic
# estimate runs every rank at the slowest pace).
cmp="$("$symtensor" compare "$work/l.onnx" $fleet $bind -o "$work/cmp" --no-simulate 2>/dev/null || true)"
grep -q "^chosen: symtensor batch shares by speed" <<<"$cmp" || fail "compare on a fleet: $cmp"
grep -q "^Megatron-best" <<<"$cmp" || fail "compare on a fleet lacks the Megatron-best row: $cmp"
# --no-simulate is not taken on a fleet, and compare says so rather than simulating silently.
grep -q "^--no-simulate: not on a mixed fleet" <<<"$cmp" || fail "compare on a fleet ignores --no-simulate silently: $cmp"
grep -q "\[simulation\]" <<<"$cmp" || fail "compare on a fleet did not simulate: $cmp"
grep -qF "group 1: H100-SXM5-80GB x8" "$work/cmp/report.md" || fail "report.md lacks the fleet's groups"

# Errors: one line naming the part.
err="$("$symtensor" compile "$work/l.onnx" --cluster dgx-h100x1+dgx-a10x2 $bind -o "$work/e" 2>&1 >/dev/null || true)"
grep -q "part 2 'dgx-a10x2'.*did you mean 'dgx-a100x2'" <<<"$err" || fail "bad part: $err"
[ "$(echo "$err" | wc -l)" -eq 1 ] || fail "more than one line: $err"
err="$("$symtensor" compile "$work/l.onnx" --cluster dgx-h100x1+ $bind -o "$work/e" 2>&1 >/dev/null || true)"
grep -q "part 2 is empty" <<<"$err" || fail "empty part: $err"
err="$("$symtensor" compile "$work/l.onnx" $fleet --nodes 2 $bind -o "$work/e" 2>&1 >/dev/null || true)"
grep -q "is a mixed fleet" <<<"$err" || fail "--nodes on a fleet: $err"
[ ! -e "$work/e" ] || fail "an error left an output folder"
echo "fleet_cli: ok"
