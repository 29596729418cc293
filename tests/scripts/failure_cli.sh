#!/usr/bin/env bash
# What-if after a failure (#32) on the command line: compile --without 1 node prints the GPUs
# each plan uses and idles and records the nodes left in plan.yaml; sweep --fail-nodes writes
# its report files; bad input is one line naming the flag, with nothing written.
# Usage: bash failure_cli.sh SYMTENSOR_BINARY SOURCE_ROOT
set -euo pipefail
symtensor="$1"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
"$symtensor" models llama2-7b --layers 8 --seq 2048 -o "$work/l.onnx" >/dev/null
bind="--bind batch=256,seq=2048"

# 4 nodes of 8 less one: 24 GPUs. No even grid takes 24 at batch 256 (dp would hold the factor 3,
# which 256 lacks); Megatron-LM's uneven stages do: pp=3 with 3/3/2 layers.
out="$("$symtensor" compile "$work/l.onnx" --cluster dgx-h100x4 --without 1 node $bind -o "$work/c")"
for key in "after losing 1 node: dgx-h100 left, 24 GPUs" "SymTensor:     uses 24 of 24 GPUs, idles 0" \
           "Megatron-best: uses 24 of 24 GPUs, idles 0" "speedup over Megatron-best"; do
  grep -qF "$key" <<<"$out" || fail "compile --without lacks '$key': $out"
done
grep -q "^cluster *dgx-h100 (24 devices)" <<<"$out" || fail "compile --without: not on 24 devices: $out"
grep -q "nodes: 3" "$work/c/plan.yaml" || fail "plan.yaml does not record the 3 nodes left"
out="$("$symtensor" compile "$work/l.onnx" --cluster dgx-h100x4 --without 1 node $bind --strategy megatron -o "$work/m")"
grep -q "^plan *megatron .*pp=3" <<<"$out" || fail "megatron after the loss is not a 3-stage pipeline: $out"
# Two layers cannot fill 3 stages: Megatron-best relaunches on its largest valid grid, 2 nodes.
"$symtensor" models llama2-7b --layers 2 --seq 2048 -o "$work/l2.onnx" >/dev/null
out="$("$symtensor" compile "$work/l2.onnx" --cluster dgx-h100x4 --without 1 node $bind -o "$work/c2")"
for key in "Megatron-best: uses 16 of 24 GPUs, idles 8" "largest valid grid is 2 nodes"; do
  grep -qF "$key" <<<"$out" || fail "compile --without (2 layers) lacks '$key': $out"
done
out="$("$symtensor" compile "$work/l2.onnx" --cluster dgx-h100x4 --without 1 node $bind --strategy megatron -o "$work/m2")"
grep -q "^cluster *dgx-h100 (16 devices)" <<<"$out" || fail "megatron after the loss (2 layers) is not on 16 devices: $out"

# Bad input: `refused COMMAND ARGS NAMED` expects one line naming NAMED, a non-zero exit and
# nothing written.
refused() {
  local command="$1" args="$2" named="$3" err
  if err="$("$symtensor" "$command" "$work/l.onnx" --cluster dgx-h100x4 $args $bind -o "$work/bad" 2>&1)"; then
    fail "$command $args succeeded"
  fi
  [ "$(wc -l <<<"$err")" -eq 1 ] || fail "$command $args: more than one line: $err"
  grep -qF -- "$named" <<<"$err" || fail "$command $args: the error does not name $named: $err"
  [ ! -e "$work/bad" ] || fail "$command $args wrote $work/bad"
}
for args in "--without 5 node" "--without x node" "--without 1 dgx-a100"; do refused compile "$args" --without; done

# sweep --fail-nodes: a row per loss, both plans, the report files.
out="$("$symtensor" sweep "$work/l.onnx" --cluster dgx-h100x4 --fail-nodes 0..2 $bind -o "$work/s" 2>/dev/null)"
for f in report.md results.csv results.json; do [ -s "$work/s/$f" ] || fail "sweep --fail-nodes wrote no $f"; done
[ "$(tail -n +2 "$work/s/results.csv" | wc -l)" -eq 3 ] || fail "results.csv has not 3 rows: $(cat "$work/s/results.csv")"
grep -q "^| 1 | dgx-h100 | 24 | 24 | " <<<"$out" || fail "sweep --fail-nodes row 1: $out"
# Throughput (SymTensor's, then Megatron-best's) does not rise as nodes are lost.
for col in 6 10; do
  awk -F, -v c="$col" 'NR > 1 { if (NR > 2 && $c > prev * (1 + 1e-9)) exit 1; prev = $c }' "$work/s/results.csv" ||
    fail "throughput column $col rises as nodes are lost: $(cat "$work/s/results.csv")"
done
for args in "--fail-nodes 3..1" "--fail-nodes 0..4"; do refused sweep "$args" "$args"; done
echo "failure_cli: ok"
