#!/usr/bin/env bash
# --moe-load-imbalance F (issue #31): bad values refused in one line naming the option; a
# skewed dropless routing slows the step and the reports say which load they assumed.
# Usage: bash moe_load_cli.sh SYMTENSOR_BINARY SOURCE_ROOT
set -euo pipefail
symtensor="$1"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fail() { echo "moe_load_cli: $*" >&2; exit 1; }
"$symtensor" models mixtral-8x7b-tiny -o "$work/m.onnx" >/dev/null
run=(simulate "$work/m.onnx" --cluster dgx-a100 --nodes 1 --gpus 4 --bind batch=8,seq=8 --megatron tp=1,pp=1,mb=1,ep=4)
for bad in 0.5 nan inf abc -1; do
  if err="$("$symtensor" "${run[@]}" --moe-load-imbalance="$bad" 2>&1 >/dev/null)"; then fail "$bad accepted"; fi
  [ "$(printf "%s\n" "$err" | grep -c .)" -eq 1 ] || fail "$bad: more than one line: $err"
  grep -q -- "--moe-load-imbalance" <<<"$err" || fail "$bad: the error does not name the option: $err"
done
step() { "$symtensor" "${run[@]}" --json "$@" | /usr/bin/python3 -c "import json,sys; j=json.load(sys.stdin); print(j['step_time_s'], '{:g}'.format(j['moe_load']['imbalance']), j['moe_load']['routing'])"; }
read -r t1 f1 r1 <<<"$(step)"
read -r t2 f2 r2 <<<"$(step --moe-load-imbalance 1.5)"
[ "$f1" = 1 ] && [ "$f2" = 1.5 ] && [ "$r1" = dropless ] || fail "reported loads $f1 $r1, $f2 $r2"
/usr/bin/python3 -c "import sys; sys.exit(0 if $t2 > $t1 else 1)" || fail "skewed step $t2 not slower than $t1"
"$symtensor" "${run[@]}" --moe-load-imbalance 1.5 | grep -q "MoE routing load: busiest expert rank at 1.5x" || fail "no load line"
echo "moe_load_cli: OK ($t1 s balanced, $t2 s at 1.5x)"
