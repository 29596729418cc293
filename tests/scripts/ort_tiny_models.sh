#!/usr/bin/env bash
# Every tiny model preset, written by `symtensor models`, runs in ONNX Runtime with finite
# outputs of the declared shapes; decoders are causal; the compare mode of the runner
# accepts identical models and rejects different ones.
# Usage: bash ort_tiny_models.sh SYMTENSOR_BINARY SOURCE_ROOT
set -euo pipefail
symtensor="$1"
root="$2"
runner="$root/scripts/ort/run.js"
# shellcheck source=lib/ort_checks.sh
source "$root/tests/scripts/lib/ort_checks.sh"

count=0
for name in $("$symtensor" models list --names | grep -- '-tiny$'); do
  "$symtensor" models "$name" -o "$work/$name.onnx" >/dev/null
  node "$runner" run "$work/$name.onnx" --bind batch=2,seq=8 --quiet --output "$work/$name.json" \
    || fail "$name: run.js run failed"
  count=$((count + 1))
done
[ "$count" -ge 7 ] || fail "expected at least 7 tiny presets, ran $count"
echo "ran $count tiny models"

# Expected output shapes, checked independently of run.js's own check.
shape_of() { node -e "const o=require('$work/$1.json').outputs['$2']; console.log(o.shape.join('x'))"; }
[ "$(shape_of gpt2-small-tiny logits)" = 2x8x128 ] || fail "gpt2-small-tiny logits shape"
[ "$(shape_of mixtral-8x7b-tiny logits)" = 2x8x128 ] || fail "mixtral-8x7b-tiny logits shape"
[ "$(shape_of bert-large-tiny pooler_output)" = 2x64 ] || fail "bert-large-tiny pooler shape"
[ "$(shape_of vit-l16-tiny logits)" = 2x10 ] || fail "vit-l16-tiny logits shape"
[ "$(shape_of resnet50-tiny output)" = 2x10 ] || fail "resnet50-tiny output shape"

# Causality: changing the last token must leave the logits of earlier positions unchanged
# and change those of the last one.
for name in gpt2-small-tiny llama2-70b-tiny mixtral-8x7b-tiny; do
  model="$work/$name.onnx"
  node "$runner" run "$model" --bind batch=1,seq=6 --quiet --save-inputs "$work/in_a.json" --output "$work/out_a.json"
  node -e "
    const fs = require('fs'); const x = JSON.parse(fs.readFileSync('$work/in_a.json'));
    const ids = x.input_ids.data; ids[ids.length - 1] = (ids[ids.length - 1] + 1) % 128;
    fs.writeFileSync('$work/in_b.json', JSON.stringify(x));"
  node "$runner" run "$model" --bind batch=1,seq=6 --quiet --inputs "$work/in_b.json" --output "$work/out_b.json"
  node -e "
    const a = require('$work/out_a.json').outputs.logits, b = require('$work/out_b.json').outputs.logits;
    const vocab = a.shape[2], split = 5 * vocab;
    let early = 0, last = 0;
    for (let i = 0; i < a.data.length; ++i) {
      const d = Math.abs(a.data[i] - b.data[i]);
      if (i < split) early = Math.max(early, d); else last = Math.max(last, d);
    }
    if (early !== 0 || last === 0) { console.error('$name: early ' + early + ' last ' + last); process.exit(1); }" \
    || fail "$name is not causal"
done

# The runner's compare mode: same model agrees (exit 0), other weights differ (exit 1).
node "$runner" compare "$work/llama2-7b-tiny.onnx" "$work/llama2-7b-tiny.onnx" --bind batch=2,seq=8 >/dev/null \
  || fail "compare of a model with itself"
"$symtensor" models llama2-7b-tiny --seed 2 -o "$work/other.onnx" >/dev/null
set +e
node "$runner" compare "$work/llama2-7b-tiny.onnx" "$work/other.onnx" --bind batch=2,seq=8 --json "$work/report.json" >/dev/null
rc=$?
set -e
[ "$rc" = 1 ] || fail "compare of different weights exited $rc, expected 1"
node -e "const r = require('$work/report.json'); if (r.ok || !(r.outputs.logits.max_abs > 0)) process.exit(1)" \
  || fail "compare report"

# A weight-free model runs too: its parameters are random inputs.
"$symtensor" models gpt-1.7b --layers 1 --hidden 64 --heads 4 --vocab 100 --seq 32 -o "$work/free.onnx" >/dev/null
node "$runner" run "$work/free.onnx" --bind batch=2,seq=8 --quiet || fail "weight-free gpt in ORT"
echo "ort_tiny_models: OK"
