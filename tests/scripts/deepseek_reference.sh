#!/usr/bin/env bash
# `models --hf-config` for deepseek_v3 (#31) computes what HF's modeling code computes: a tiny
# DeepSeek-V3 config (3 layers, the first dense; 8 experts in 4 groups, 2 groups and 2 experts a
# token, a shared expert; yarn rope) written with random weights, run in ONNX Runtime, against a
# numpy re-implementation of DeepseekV3ForCausalLM.forward (deepseek_reference.py) on its weights.
# Usage: bash deepseek_reference.sh SYMTENSOR_BINARY SOURCE_ROOT
set -euo pipefail
symtensor="$1"
root="$2"
# shellcheck source=lib/ort_checks.sh
source "$root/tests/scripts/lib/ort_checks.sh"
cat >"$work/config.json" <<'JSON'
{"model_type": "deepseek_v3", "hidden_size": 64, "intermediate_size": 96, "moe_intermediate_size": 32,
 "num_hidden_layers": 3, "first_k_dense_replace": 1, "num_attention_heads": 4, "q_lora_rank": 32,
 "kv_lora_rank": 16, "qk_nope_head_dim": 16, "qk_rope_head_dim": 8, "v_head_dim": 16, "n_routed_experts": 8,
 "num_experts_per_tok": 2, "n_shared_experts": 1, "n_group": 4, "topk_group": 2, "vocab_size": 128,
 "max_position_embeddings": 64, "routed_scaling_factor": 2.5, "rms_norm_eps": 1e-06, "rope_theta": 10000,
 "rope_scaling": {"beta_fast": 32, "beta_slow": 1, "factor": 4, "mscale": 1.0, "mscale_all_dim": 1.0,
                  "original_max_position_embeddings": 16, "type": "yarn"}}
JSON
"$symtensor" models --hf-config "$work/config.json" --weights random -o "$work/m.onnx" >/dev/null
node "$root/scripts/ort/run.js" run "$work/m.onnx" --bind batch=2,seq=8 --quiet --save-inputs "$work/in.json" \
  --output "$work/out.json" || fail "ONNX Runtime run failed"
/usr/bin/python3 "$root/tests/scripts/deepseek_reference.py" "$work/config.json" "$work/m.onnx" "$work/in.json" \
  "$work/out.json" || fail "the graph differs from HF's DeepseekV3 forward"
echo "deepseek_reference: OK"
