#!/usr/bin/env bash
# `symtensor models --hf-config config.json` (#31): a tiny config.json of each family written
# with random weights runs in ONNX Runtime; Mistral's sliding window is in force (a token
# beyond the window of every layer does not reach a later logit); refusals and bad files
# exit non-zero with one line naming the file and key, and leave no output file behind.
# Usage: bash hf_config_cli.sh SYMTENSOR_BINARY SOURCE_ROOT
set -euo pipefail
symtensor="$1"
root="$2"
runner="$root/scripts/ort/run.js"
# shellcheck source=lib/ort_checks.sh
source "$root/tests/scripts/lib/ort_checks.sh"

common='"hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 2, "num_attention_heads": 4,
        "num_key_value_heads": 2, "vocab_size": 128'
declare -A configs=(
  [llama]="{\"model_type\": \"llama\", $common, \"rope_theta\": 500000.0, \"rope_scaling\": {\"rope_type\": \"llama3\",
           \"factor\": 8.0, \"low_freq_factor\": 1.0, \"high_freq_factor\": 4.0, \"original_max_position_embeddings\": 64}}"
  [llama_tied]="{\"model_type\": \"llama\", $common, \"tie_word_embeddings\": true, \"attention_bias\": true}"
  [mistral]="{\"model_type\": \"mistral\", $common, \"sliding_window\": 4}"
  [mixtral]="{\"model_type\": \"mixtral\", $common, \"num_local_experts\": 4, \"num_experts_per_tok\": 2}"
  [qwen2]="{\"model_type\": \"qwen2\", $common}"
  [qwen3]="{\"model_type\": \"qwen3\", $common, \"head_dim\": 32}"
  [qwen3_moe]="{\"model_type\": \"qwen3_moe\", $common, \"head_dim\": 32, \"moe_intermediate_size\": 32,
               \"num_experts\": 8, \"num_experts_per_tok\": 2, \"norm_topk_prob\": false}"
  [gemma3_text]="{\"model_type\": \"gemma3_text\", $common, \"head_dim\": 32, \"sliding_window\": 4,
                 \"sliding_window_pattern\": 2, \"query_pre_attn_scalar\": 24}"
  [deepseek_v3]="{\"model_type\": \"deepseek_v3\", $common, \"moe_intermediate_size\": 32, \"first_k_dense_replace\": 1,
                 \"q_lora_rank\": 32, \"kv_lora_rank\": 16, \"qk_nope_head_dim\": 16, \"qk_rope_head_dim\": 8,
                 \"v_head_dim\": 16, \"n_routed_experts\": 8, \"num_experts_per_tok\": 2, \"n_shared_experts\": 1,
                 \"n_group\": 4, \"topk_group\": 2}"
  [gpt_oss]="{\"model_type\": \"gpt_oss\", $common, \"head_dim\": 16, \"sliding_window\": 4, \"num_local_experts\": 4,
             \"num_experts_per_tok\": 2, \"rope_scaling\": {\"rope_type\": \"yarn\", \"factor\": 4.0, \"beta_fast\": 32.0,
             \"beta_slow\": 1.0, \"original_max_position_embeddings\": 16, \"truncate\": false}}"
)
for family in "${!configs[@]}"; do
  echo "${configs[$family]}" >"$work/$family.json"
  "$symtensor" models --hf-config "$work/$family.json" --weights random -o "$work/$family.onnx" >"$work/log" \
    || { cat "$work/log" >&2; fail "$family: models --hf-config failed"; }
  model_type="$(node -e "console.log(JSON.parse(require('fs').readFileSync('$work/$family.json')).model_type)")"
  grep -q "^wrote $work/$family.onnx: $model_type, 2 layers" "$work/log" || fail "$family: summary $(cat "$work/log")"
  [ ! -e "$work/$family.onnx.tmp" ] || fail "$family: temporary file left behind"
  node "$runner" run "$work/$family.onnx" --bind batch=2,seq=8 --quiet --output "$work/$family.out.json" \
    || fail "$family: ONNX Runtime run failed"
done
echo "ran ${#configs[@]} families in ONNX Runtime"

# Sliding window 4, 2 layers: position p sees p-6..p through both layers, so changing token 0
# changes the logits at position 1 but not at position 7 (plain causal attention would).
for family in mistral qwen2; do
  node "$runner" run "$work/$family.onnx" --bind batch=1,seq=8 --quiet --save-inputs "$work/in_a.json" --output "$work/a.json"
  node -e "
    const fs = require('fs'); const x = JSON.parse(fs.readFileSync('$work/in_a.json'));
    x.input_ids.data[0] = (x.input_ids.data[0] + 1) % 128;
    fs.writeFileSync('$work/in_b.json', JSON.stringify(x));"
  node "$runner" run "$work/$family.onnx" --bind batch=1,seq=8 --quiet --inputs "$work/in_b.json" --output "$work/b.json"
  node -e "
    const a = require('$work/a.json').outputs.logits, b = require('$work/b.json').outputs.logits;
    const V = a.shape[2]; const diff = p => { let m = 0; for (let i = p * V; i < (p + 1) * V; ++i) m = Math.max(m, Math.abs(a.data[i] - b.data[i])); return m; };
    const windowed = '$family' === 'mistral';
    if (!(diff(1) > 0) || (windowed ? diff(7) !== 0 : !(diff(7) > 0))) {
      console.error('$family: position 1 ' + diff(1) + ', position 7 ' + diff(7)); process.exit(1);
    }" || fail "$family: the window does not act as the config says"
done

expect_refusal() {  # expect_refusal PATTERN JSON
  local pattern="$1" err
  echo "$2" >"$work/bad.json"
  rm -f "$work/bad.onnx"
  if err="$("$symtensor" models --hf-config "$work/bad.json" -o "$work/bad.onnx" 2>&1)"; then fail "accepted: $2"; fi
  grep -q -- "$pattern" <<<"$err" || fail "'$2' said: $err"
  [ "$(echo "$err" | wc -l)" -eq 1 ] || fail "more than one line: $err"
  [ ! -e "$work/bad.onnx" ] && [ ! -e "$work/bad.onnx.tmp" ] || fail "output written for: $2"
}
expect_refusal "bad.json: model_type 'qwen2_moe' is not supported yet: the shared expert" \
  '{"model_type": "qwen2_moe", "hidden_size": 2048}'
expect_refusal "bad.json: model_type 'gemma2' is not supported yet: logit soft-capping" '{"model_type": "gemma2"}'
expect_refusal "bad.json: missing key 'head_dim' (model_type 'gpt_oss')" \
  "{\"model_type\": \"gpt_oss\", $common, \"sliding_window\": 4, \"num_local_experts\": 4, \"num_experts_per_tok\": 2}"
expect_refusal "bad.json: model_type 'bert' is not supported" '{"model_type": "bert"}'
expect_refusal "bad.json: missing key 'vocab_size' (model_type 'mistral')" \
  '{"model_type": "mistral", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4}'
expect_refusal "bad.json: model_type 'llama': key 'hidden_act' = \"gelu\" is not written yet" "{\"model_type\": \"llama\", $common, \"hidden_act\": \"gelu\"}"
expect_refusal "bad.json: not valid JSON" '{"model_type": "llama",'
err="$("$symtensor" models --hf-config "$work/none.json" -o "$work/x.onnx" 2>&1)" && fail "a missing file was accepted"
grep -q "cannot open config file '$work/none.json'" <<<"$err" || fail "a missing file is not named: $err"
echo "hf_config_cli: OK"
