#!/usr/bin/env bash
# `models --hf-config` for gpt_oss (#31) computes what HF's modeling code computes: a tiny
# gpt-oss config (2 layers, the first in a sliding window of 4 and the second full, at seq 8;
# attention sinks; 4 biased experts, 2 a token, the SwiGLU clamped at 0.5 so that random weights
# reach the clamps; yarn rope x4 from an original 4096 positions, untruncated, whose correction
# range then falls between whole dims) written with random weights, run in ONNX Runtime,
# against a numpy re-implementation of GptOssForCausalLM.forward (gpt_oss_reference.py) on its
# weights.
# Usage: bash gpt_oss_reference.sh SYMTENSOR_BINARY SOURCE_ROOT
set -euo pipefail
symtensor="$1"
root="$2"
# shellcheck source=lib/ort_checks.sh
source "$root/tests/scripts/lib/ort_checks.sh"
cat >"$work/config.json" <<'JSON'
{"model_type": "gpt_oss", "hidden_size": 64, "intermediate_size": 48, "num_hidden_layers": 2,
 "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "num_local_experts": 4,
 "num_experts_per_tok": 2, "vocab_size": 128, "max_position_embeddings": 16384, "sliding_window": 4,
 "layer_types": ["sliding_attention", "full_attention"], "rope_theta": 150000, "rms_norm_eps": 1e-05,
 "swiglu_limit": 0.5, "attention_bias": true, "tie_word_embeddings": false,
 "rope_scaling": {"beta_fast": 32.0, "beta_slow": 1.0, "factor": 4.0, "original_max_position_embeddings": 4096,
                  "rope_type": "yarn", "truncate": false}}
JSON
"$symtensor" models --hf-config "$work/config.json" --weights random -o "$work/m.onnx" >/dev/null
node "$root/scripts/ort/run.js" run "$work/m.onnx" --bind batch=2,seq=8 --quiet --save-inputs "$work/in.json" \
  --output "$work/out.json" || fail "ONNX Runtime run failed"
/usr/bin/python3 "$root/tests/scripts/gpt_oss_reference.py" "$work/config.json" "$work/m.onnx" "$work/in.json" \
  "$work/out.json" || fail "the graph differs from HF's GptOss forward"
echo "gpt_oss_reference: OK"
