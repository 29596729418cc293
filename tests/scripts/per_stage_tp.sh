#!/usr/bin/env bash
# Per-stage tensor parallelism (#32) proven in ONNX Runtime: a two-stage pipeline whose first
# stage runs Megatron's layout at tp=2 and whose second runs it at tp=4, on one mesh refined
# from both (gpu 4 x 2 and 2 x 4 -> 2 x 2 x 2), as take_stage_cuts makes them for a mixed
# fleet's stages. The plan file is written by hand from the two plans (the format is
# hand-editable); the sharded program must equal the original, with 2 ranks' graphs in stage 0
# and 4 in stage 1.
# Usage: bash per_stage_tp.sh SYMTENSOR_BINARY SOURCE_ROOT
set -euo pipefail
symtensor="$1"
root="$2"
# shellcheck source=lib/ort_checks.sh
source "$root/tests/scripts/lib/ort_checks.sh"

model="$(model_file llama2-7b-tiny)"
bind="batch=16,seq=8"
for tp in 2 4; do
  "$symtensor" compile "$model" --cluster dgx-h100 --nodes 2 --gpus 8 --bind "$bind" \
    --strategy megatron --megatron "tp=$tp,pp=2,mb=$tp,sp=1" -o "$work/tp$tp" >/dev/null
done
grep -q "factors: \[4, 2\]" "$work/tp2/plan.yaml" || fail "tp=2: not a 4 x 2 mesh of GPUs"
grep -q "factors: \[2, 4\]" "$work/tp4/plan.yaml" || fail "tp=4: not a 2 x 4 mesh of GPUs"

# Stage 0's operators from the tp=2 plan, stage 1's from the tp=4 plan, their GPU axes renamed
# onto gpu0 x gpu1 x gpu2 (each of size 2); the derived sections (mesh axes, tensors,
# predicted) left out.
/usr/bin/python3 - "$work/tp2/plan.yaml" "$work/tp4/plan.yaml" "$work/both.yaml" <<'EOF'
import re, sys
tp2, tp4 = (open(p).read().split('\n') for p in sys.argv[1:3])
rename = {0: {'gpu0': 'gpu0, gpu1', 'gpu1': 'gpu2'}, 1: {'gpu0': 'gpu0', 'gpu1': 'gpu1, gpu2'}}
node = re.compile(r'^  - \{name: (.*?), op: .*, stage: (\d+), cut: \{(.*)\}\}$')
stage1 = {m.group(1): line for line in tp4 if (m := node.match(line)) and m.group(2) == '1'}
out, skipping = [], False
for line in tp2:
    if line.startswith('tensors:') or line.startswith('predicted:'):
        break
    if line.startswith('  axes:'):
        skipping = True
        continue
    if skipping and line.startswith('    - '):
        continue
    skipping = False
    line = line.replace('{level: gpu, factors: [4, 2]}', '{level: gpu, factors: [2, 2, 2]}')
    m = node.match(line)
    if m:
        stage = int(m.group(2))
        if stage == 1:
            line = stage1[m.group(1)]
        line = re.sub(r'\bgpu\d\b', lambda a: rename[stage][a.group(0)], line)
    out.append(line)
open(sys.argv[3], 'w').write('\n'.join(out) + '\n')
EOF

"$symtensor" compile "$model" --cluster dgx-h100 --nodes 2 --gpus 8 --bind "$bind" --plan "$work/both.yaml" \
  --onnx -o "$work/both" >"$work/compile.log" 2>&1 || { cat "$work/compile.log" >&2; fail "compile --plan both.yaml failed"; }
grep -q "^mesh *node=2 (pipeline) x gpu0=2 x gpu1=2 x gpu2=2" "$work/compile.log" || fail "not on the refined mesh: $(cat "$work/compile.log")"
[ "$(ls "$work/both" | grep -c '^stage_0_rank_')" = 2 ] || fail "stage 0 should have 2 ranks' graphs (tp=2): $(ls "$work/both")"
[ "$(ls "$work/both" | grep -c '^stage_1_rank_')" = 4 ] || fail "stage 1 should have 4 ranks' graphs (tp=4): $(ls "$work/both")"
"$symtensor" verify "$model" "$work/both" --rtol 1e-4 >"$work/verify.log" 2>&1 || { cat "$work/verify.log" >&2; fail "verify failed"; }
grep -q "verify: OK" "$work/verify.log" || fail "no OK line: $(cat "$work/verify.log")"
echo "per_stage_tp: tp=2 then tp=4 stages verified ($(grep -o 'max rel [0-9.e+-]*' "$work/verify.log" | sort -t' ' -k3 -g | tail -1))"
