#!/usr/bin/env bash
# Models as their users export them (tests/scripts/exporters/export_models.py: Debian's
# PyTorch and torchvision, dynamic axes on the inputs only, one static, one whose batch dim
# has another name) compile under symtensor, megatron (where it applies), dp and zero3 on
# 2, 4 and 6 devices with --onnx, and the sharded programs verify in ONNX Runtime (rtol
# 1e-4, atol 1e-5). A strategy that does not apply must say why in one line, and no plan is
# refused for an uneven split. Among them (#31): a ViT of 17 tokens, PyTorch's seq-major
# nn.TransformerEncoder, a stride-2 CNN exported with dynamic H and W (bound 33) and a
# capacity-routed MoE; and (#32) a LLaVA-style vision-language model.
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
while read -r name bind kind knobs; do
  model="$work/models/$name.onnx"
  bind_args=()
  [ "$bind" != "-" ] && bind_args=(--bind "$bind")
  strategies="symtensor dp zero3"
  # Transformers, the vision ones (kind transformer) too, also run under megatron; a fourth
  # field names Megatron knobs to run as well (megatron:tp=2), where the search alone would
  # not reach them (tiny models run fastest without tensor parallelism).
  [ "$kind" != vision ] && strategies="symtensor megatron dp zero3"
  [ -n "${knobs:-}" ] && strategies="$strategies megatron:$knobs"
  for strategy in $strategies; do
    for gpus in 2 4 6; do
      dir="$work/out_${name}_${strategy}_$gpus"
      strategy_args=(--strategy "${strategy%%:*}")
      [ "$strategy" != "${strategy#*:}" ] && strategy_args+=(--megatron "${strategy#*:}")
      if ! "$symtensor" compile "$model" --cluster dgx-a100 --gpus "$gpus" "${bind_args[@]}" "${strategy_args[@]}" \
        --onnx -o "$dir" >"$work/compile.log" 2>&1; then
        # A refusal is one line naming why, with no partial output, and never an uneven split
        # (uneven splits run as DTensor chunks them, #31).
        [ "$(grep -c 'symtensor: error:' "$work/compile.log")" -eq 1 ] || { cat "$work/compile.log" >&2; fail "$name $strategy $gpus: no one-line reason"; }
        [ ! -e "$dir" ] || fail "$name $strategy $gpus: partial output left in $dir"
        ! grep -Eq 'unevenly|even split|not bound to an integer' "$work/compile.log" \
          || fail "$name $strategy x$gpus: refused for an uneven split: $(grep 'symtensor: error:' "$work/compile.log")"
        echo "$name $strategy x$gpus: refused: $(grep 'symtensor: error:' "$work/compile.log" | cut -c18-)"
        refused=$((refused + 1))
        continue
      fi
      "$symtensor" verify "$model" "$dir" --rtol 1e-4 >"$work/verify.log" 2>&1 \
        || { cat "$work/verify.log" >&2; fail "$name $strategy x$gpus: verify failed"; }
      grep -q "verify: OK" "$work/verify.log" || fail "$name $strategy x$gpus: no OK line"
      # Megatron's tensor parallelism on 2 devices (dp=1) cuts every layer's attention over the
      # heads, the first included: a post-norm model's first layer reads the embedding, not a
      # norm (transformer_structure.h), and ran whole on every rank before.
      if [ "$strategy" = megatron:tp=2 ] && [ "$gpus" = 2 ]; then
        uncut=$(grep -E 'op: (FusedAttention|Attention)[,}]' "$dir/plan.yaml" | grep -c 'cut: {}' || true)
        [ "$uncut" -eq 0 ] || fail "$name $strategy x$gpus: $uncut attention node(s) not cut over the heads"
      fi
      echo "$name $strategy x$gpus: OK, $(grep -o 'max rel [0-9.e+-]*' "$work/verify.log" | sort -t' ' -k3 -g | tail -1)"
      echo "$name $strategy $gpus" >>"$work/verified.txt"
      verified=$((verified + 1))
      rm -rf "$dir"
    done
  done
done <"$work/models/models.txt"
# #31's classes verify on 2, 4 and 6 devices: the odd-token ViT (16 patches + class token)
# under dp and megatron, the seq-major nn.TransformerEncoder (attention on batch*heads) under
# megatron and dp, the stride-2 CNN with dynamic H, W bound odd (floor and ceil_mode extents)
# and the capacity-routed MoE under symtensor. Both nn.MultiheadAttention models also under
# tensor parallelism (megatron:tp=2, with dp 2 and 3 on 4 and 6): the importer gives their
# heads, merged with the batch as PyTorch writes them, a dim of their own (merged_heads.h).
# The post-norm encoders (seq_major_encoder, and bert_padding_mask with its embedding norm)
# under megatron:tp=2 cut their first layer like the others.
# A must is NAME:STRATEGY, the strategy as verified.txt records it (megatron:tp=2 included).
for must in vit:dp vit:megatron vit:megatron:tp=2 seq_major_encoder:megatron seq_major_encoder:megatron:tp=2 \
  bert_padding_mask:megatron:tp=2 seq_major_encoder:dp odd_stride_cnn:symtensor odd_stride_cnn:dp moe_capacity:symtensor \
  tiny_vlm:symtensor tiny_vlm:megatron tiny_vlm:dp; do
  for gpus in 2 4 6; do
    grep -qx "${must%%:*} ${must#*:} $gpus" "$work/verified.txt" || fail "${must%%:*} ${must#*:} x$gpus did not verify"
  done
done
# The PyTorch-exported vision-language model (#32): MIMO's split finds its tower by the module
# scopes PyTorch writes (/vision_tower/, /multi_modal_projector/), and Megatron's layout cuts the
# patch convolution with the batch (its class token's Expand reads the patches' Shape).
vlm="$work/models/tiny_vlm.onnx"
"$symtensor" compare "$vlm" --cluster dgx-a100 --gpus 4 --bind batch=12,seq=8 --strategies symtensor,megatron-mimo \
  --no-simulate -o "$work/vlm_compare" >"$work/vlm.log" 2>&1 || { cat "$work/vlm.log" >&2; fail "tiny_vlm: compare failed"; }
grep -q "megatron-mimo vision on " "$work/vlm.log" || { cat "$work/vlm.log" >&2; fail "tiny_vlm: no MIMO split"; }
"$symtensor" compile "$vlm" --cluster dgx-a100 --gpus 4 --bind batch=12,seq=8 --strategy megatron -o "$work/vlm_plan" \
  >"$work/vlm.log" 2>&1 || { cat "$work/vlm.log" >&2; fail "tiny_vlm: compile failed"; }
grep -q "op: Conv, stage: 0, cut: {n: \[gpu\]}" "$work/vlm_plan/plan.yaml" \
  || fail "tiny_vlm: the patch convolution is not cut with the batch: $(grep 'op: Conv' "$work/vlm_plan/plan.yaml")"
echo "tiny_vlm: MIMO split found, patch convolution cut with the batch"
echo "exporters: $verified plans verified, $refused refused with a reason"
