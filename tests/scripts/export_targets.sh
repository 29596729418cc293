#!/usr/bin/env bash
# `symtensor export` and `compile --export`: every target's file parses with the target's
# own rules (Megatron/NeMo documented names and types, tomllib, json, ast with the
# documented PyTorch signatures) and reads back the plan's tp/pp/vp/cp/dp/micro-batch/
# recompute/ZeRO; world size and batch invariants; a plan with a per-operator cut is
# listed as not expressible with the nearest plan and both predicted step times; errors.
# Usage: bash export_targets.sh SYMTENSOR_BINARY SOURCE_ROOT
set -euo pipefail
symtensor="$1"; root="$2"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
py=/usr/bin/python3
check="$root/tests/scripts/export_checks.py"
"$symtensor" models llama2-70b-tiny -o "$work/llama.onnx" >/dev/null
"$symtensor" models mixtral-8x7b-tiny -o "$work/moe.onnx" >/dev/null
"$symtensor" models llama --layers 8 --hidden 64 --heads 4 --kv-heads 2 --intermediate 96 --vocab 128 -o "$work/l8.onnx" >/dev/null
cl="--cluster dgx-a100 --nodes 2 --gpus 4"
bind="--bind batch=16,seq=32"

# Megatron knobs with tp, pp, sp, selective recompute, micro-batch 2: exact on Megatron and
# NeMo; the launch line gives world = 8 = tp*pp*dp. torchtitan's selective mode recomputes
# another set of tensors than Megatron's priced here: listed, and the nearest plan written.
"$symtensor" compile "$work/llama.onnx" $cl $bind --megatron tp=2,pp=2,sp=1,recompute=selective,mb=2 \
  -o "$work/m" --export megatron >"$work/m.out"
grep -q "expressed *exact" "$work/m.out" || fail "megatron plan not exact on megatron: $(cat "$work/m.out")"
$py "$check" megatron "$work/m/megatron.args" tp=2 pp=2 vp=1 cp=1 dp=2 mb=2 accumulation=4 batch=16 zero=0 \
  recompute=selective sp=1 world=8
for t in nemo torchtitan; do
  "$symtensor" export "$work/m/plan.yaml" --model "$work/llama.onnx" $cl $bind --to $t -o "$work/m/out.$t" >"$work/$t.out"
done
grep -q "expressed *exact" "$work/nemo.out" || fail "nemo not exact: $(cat "$work/nemo.out")"
$py "$check" nemo "$work/m/out.nemo" tp=2 pp=2 vp=1 cp=1 dp=2 mb=2 accumulation=4 batch=16 zero=0 recompute=selective sp=1 world=8
grep -q "selective recomputation priced as Megatron-LM's" "$work/torchtitan.out" \
  || fail "torchtitan: Megatron's selective not listed: $(cat "$work/torchtitan.out")"
grep -q "^nearest found *searched inside torchtitan" "$work/torchtitan.out" \
  || fail "torchtitan: the nearest plan was not searched: $(cat "$work/torchtitan.out")"
$py "$check" torchtitan "$work/m/out.torchtitan" tp=1 pp=1 cp=1 dp=8 mb=2 accumulation=1 batch=16 zero=0 \
  recompute=none world=8

# DeepSpeed cannot combine AutoTP with a pipeline, nor selective recomputation: listed, and
# the nearest plan is what the JSON says: searched inside DeepSpeed (#30), for this tiny model
# plain data parallelism, faster than the plan adjusted item by item (tp folded into dp, full
# recompute), whose prediction is printed beside it.
"$symtensor" export "$work/m/plan.yaml" --model "$work/llama.onnx" $cl $bind --to deepspeed -o "$work/m/ds.json" >"$work/ds.out"
grep -q "AutoTP does not combine with PipelineModule" "$work/ds.out" || fail "deepspeed: tp+pp not listed: $(cat "$work/ds.out")"
grep -q "nearest step time" "$work/ds.out" || fail "deepspeed: no nearest step time"
grep -q "^plan step time" "$work/ds.out" || fail "deepspeed: no plan step time"
[ -s "$work/m/ds.json.nearest.yaml" ] || fail "deepspeed: no nearest plan written"
grep -q "^nearest found *searched inside deepspeed (the fastest plan it runs as written); the plan adjusted item by item: .*, fits" \
  "$work/ds.out" || fail "deepspeed: the nearest plan was not searched: $(cat "$work/ds.out")"
$py "$check" deepspeed "$work/m/ds.json" tp=1 pp=1 dp=8 mb=2 accumulation=1 batch=16 zero=0 recompute=none world=8
# ... and DeepSpeed writes it exactly
"$symtensor" export "$work/m/ds.json.nearest.yaml" --to deepspeed -o "$work/m/ds2.json" >"$work/ds2.out"
grep -q "^expressed *exact" "$work/ds2.out" || fail "deepspeed: the nearest plan is not exact: $(cat "$work/ds2.out")"
cmp -s "$work/m/ds.json" "$work/m/ds2.json" || fail "deepspeed: the nearest plan exports another config"
# the nearest plan is a plan: compile reads it back
"$symtensor" compile "$work/llama.onnx" $cl $bind --plan "$work/m/ds.json.nearest.yaml" -o "$work/near" >/dev/null \
  || fail "the nearest plan does not read back"

# DTensor: module names from the model, Colwise/Rowwise per projection, SequenceParallel norms.
"$symtensor" compile "$work/llama.onnx" --cluster dgx-a100 --nodes 1 --gpus 4 $bind --megatron tp=2,sp=1 \
  -o "$work/t" --export dtensor >"$work/dt.out"
grep -q "expressed *exact" "$work/dt.out" || fail "dtensor: tp=2 dp=2 not exact: $(cat "$work/dt.out")"
$py "$check" dtensor "$work/t/dtensor_parallelize.py" tp=2 dp=2 zero=0 recompute=none world=4 layers=2 \
  style:model.layers.0.self_attn.q_proj=ColwiseParallel style:model.layers.1.self_attn.o_proj=RowwiseParallel \
  style:model.layers.0.mlp.down_proj=RowwiseParallel style:model.layers.0.input_layernorm=SequenceParallel \
  style:model.embed_tokens=RowwiseParallel style:lm_head=ColwiseParallel
# JAX: one PartitionSpec per parameter, the tp axis on q_proj's output and o_proj's input.
"$symtensor" export "$work/t/plan.yaml" --model "$work/llama.onnx" --cluster dgx-a100 --nodes 1 --gpus 4 $bind \
  --to jax -o "$work/t/jax.py" >/dev/null
$py "$check" jax "$work/t/jax.py" world=4 params=21 \
  "spec:model.layers.0.self_attn.q_proj.weight=[None, 'gpu1']" "spec:model.layers.0.self_attn.o_proj.weight=['gpu1', None]"

# ZeRO-3: FSDP on torchtitan, fully_shard in the DTensor script, stage 3 in DeepSpeed.
"$symtensor" compile "$work/llama.onnx" $cl $bind --strategy zero3 -o "$work/z" >/dev/null
for t in torchtitan dtensor deepspeed megatron; do
  "$symtensor" export "$work/z/plan.yaml" --model "$work/llama.onnx" $cl $bind --to $t -o "$work/z/out.$t" >"$work/z.$t" \
    || fail "zero3 -> $t failed"
  grep -q "expressed *exact" "$work/z.$t" || fail "zero3 not exact on $t: $(cat "$work/z.$t")"
done
$py "$check" torchtitan "$work/z/out.torchtitan" tp=1 pp=1 dp=8 zero=3 batch=16
$py "$check" dtensor "$work/z/out.dtensor" tp=1 dp=8 zero=3 world=8
$py "$check" deepspeed "$work/z/out.deepspeed" pp=1 dp=8 mb=2 accumulation=1 batch=16 zero=3 world=8
$py "$check" megatron "$work/z/out.megatron" tp=1 pp=1 dp=8 zero=3 world=8

# Virtual pipeline and uneven stages on an 8-layer model: Megatron's flags.
# Expert parallelism (Mixtral, tiny): ep and etp written for Megatron, NeMo and torchtitan
# (etp=1: torchtitan's experts are not tensor-parallel), read back with the expert grid's checks.
"$symtensor" compile "$work/moe.onnx" $cl $bind --megatron tp=2,sp=1,ep=4,etp=1,mb=1 -o "$work/moe" --export megatron >"$work/moe.out"
grep -q "expressed *exact" "$work/moe.out" || fail "expert-parallel plan not exact on megatron: $(cat "$work/moe.out")"
$py "$check" megatron "$work/moe/megatron.args" tp=2 pp=1 dp=4 ep=4 etp=1 world=8
for t in nemo torchtitan; do
  "$symtensor" export "$work/moe/plan.yaml" --model "$work/moe.onnx" $cl $bind --to $t -o "$work/moe/out.$t" >"$work/moe.$t.out"
  if [ "$t" = torchtitan ]; then
    # torchtitan's llama3 flavor builds no experts: the plan is written as it is, the model named as the gap.
    grep -q "model: 4 experts (top-2): torchtitan's llama3 does not build it" "$work/moe.$t.out" ||
      fail "torchtitan export of an MoE names no model gap: $(cat "$work/moe.$t.out")"
    grep -q "nearest" "$work/moe.$t.out" && fail "torchtitan export of an expressible MoE plan wrote a nearest plan: $(cat "$work/moe.$t.out")"
  else
    grep -q "expressed *exact" "$work/moe.$t.out" || fail "expert-parallel plan not exact on $t: $(cat "$work/moe.$t.out")"
  fi
  $py "$check" $t "$work/moe/out.$t" tp=2 dp=4 ep=4 world=8
done

"$symtensor" compile "$work/l8.onnx" $cl $bind --megatron tp=2,pp=2,vp=2,mb=1,recompute=full,distopt=1 \
  -o "$work/v" --export megatron >/dev/null
$py "$check" megatron "$work/v/megatron.args" tp=2 pp=2 vp=2 dp=2 mb=1 accumulation=8 batch=16 zero=1 recompute=full world=8
# torchtitan has no distributed optimizer: the nearest plan is written, found as the summary says
"$symtensor" export "$work/v/plan.yaml" --model "$work/l8.onnx" $cl $bind --to torchtitan -o "$work/v/t0.toml" >"$work/v/t0.out"
grep -q "distributed optimizer: torchtitan replicates" "$work/v/t0.out" || fail "torchtitan: distopt not listed: $(cat "$work/v/t0.out")"
grep -Eq "^nearest found *(searched inside torchtitan|adjusted item by item)" "$work/v/t0.out" \
  || fail "torchtitan: how the nearest plan was found is not said: $(cat "$work/v/t0.out")"
# the same layout without it is torchtitan's exactly: interleaved, two layers per stage
"$symtensor" compile "$work/l8.onnx" $cl $bind --megatron tp=2,pp=2,vp=2,mb=1,sp=1,recompute=full \
  -o "$work/v2" --export torchtitan >"$work/v2.out"
grep -q "expressed *exact" "$work/v2.out" || fail "torchtitan: tp=2 pp=2 vp=2 not exact: $(cat "$work/v2.out")"
cp "$work/v2/torchtitan.toml" "$work/v/t.toml"
$py "$check" torchtitan "$work/v/t.toml" tp=2 pp=2 dp=2 zero=0 recompute=full
grep -q 'pipeline_parallel_schedule = "Interleaved1F1B"' "$work/v/t.toml" || fail "torchtitan: vp=2 not interleaved"
grep -q 'pipeline_parallel_layers_per_stage = 2' "$work/v/t.toml" || fail "torchtitan: layers per stage"
# uneven: move layer 0's... the first stage keeps 3 layers, the last 5 (hand-edited stages)
"$symtensor" compile "$work/l8.onnx" $cl $bind --megatron tp=2,pp=2 -o "$work/u" >/dev/null
$py - "$work/u/plan.yaml" <<'PY'
import re, sys
p = sys.argv[1]; text = open(p).read().splitlines()
# nodes of layer 3 (scope /model/layers.3/) move from stage 0 to stage 1
out = [re.sub(r"stage: 0", "stage: 1", l) if "/model/layers.3/" in l else l for l in text]
open(p, "w").write("\n".join(out) + "\n")
PY
"$symtensor" export "$work/u/plan.yaml" --model "$work/l8.onnx" $cl $bind --to megatron -o "$work/u/m.args" >"$work/u.out"
$py "$check" megatron "$work/u/m.args" tp=2 pp=2 first=3 last=5 world=8
grep -q "expressed *exact" "$work/u.out" || fail "uneven first/last not exact on megatron: $(cat "$work/u.out")"
"$symtensor" export "$work/u/plan.yaml" --model "$work/l8.onnx" $cl $bind --to nemo -o "$work/u/n.py" >"$work/un.out"
grep -q "uneven pipeline stages (3,5 layers)" "$work/un.out" || fail "nemo: uneven stages not listed: $(cat "$work/un.out")"

# A per-operator cut that is not the recipe: one line naming it, nearest plan beside.
sed -i 's|\(MatMul_29, op: MatMul, stage: 0, cut: {b: \[gpu0\]\), n: \[gpu1\]}|\1}|' "$work/m/plan.yaml"
grep -q "MatMul_29, op: MatMul, stage: 0, cut: {b: \[gpu0\]}}" "$work/m/plan.yaml" || fail "test edit did not apply"
"$symtensor" export "$work/m/plan.yaml" --model "$work/llama.onnx" $cl $bind --to megatron -o "$work/m/edited.args" >"$work/e.out"
grep -q "MatMul_29: output width cut 1 ways where the other layers use tp=2" "$work/e.out" || fail "per-op cut not listed: $(cat "$work/e.out")"
grep -q "nearest step time" "$work/e.out" || fail "no nearest step time: $(cat "$work/e.out")"
grep -q "^# predicted step time of the nearest" "$work/m/edited.args" || fail "no nearest cost in the file header"
[ -s "$work/m/edited.args.nearest.yaml" ] || fail "no nearest plan"

# errors: one line, non-zero, nothing written
if err="$("$symtensor" export "$work/m/plan.yaml" --model "$work/llama.onnx" $cl $bind --to caffe -o "$work/x.args" 2>&1)"; then
  fail "--to caffe accepted"; fi
grep -q "unknown target 'caffe'" <<<"$err" || fail "bad target said: $err"
[ "$(echo "$err" | wc -l)" -eq 1 ] || fail "not one line: $err"
[ ! -e "$work/x.args" ] || fail "file written on error"
if err="$("$symtensor" compile "$work/llama.onnx" $cl $bind --export caffe -o "$work/cx" 2>&1)"; then fail "compile --export caffe accepted"; fi
[ ! -e "$work/cx" ] || fail "compile --export caffe wrote output"
echo "export_targets: ok"
