#!/usr/bin/env bash
# `symtensor serve --onnx` (issue #33): decode steps with a KV cache exported by Debian's
# PyTorch (tests/scripts/exporters/export_decode_steps.py: GPT-2 with 4 heads, HF-style LLaMA
# with 4 query and 2 KV heads) written per rank under tensor parallelism (with replicas, with two pipeline stages), and
# verified in ONNX Runtime against the unsharded model. Each rank's file holds its heads of the
# cache: past_key/past_value of (batch / replicas, KV heads / tp, past, head dim) and the
# present outputs of the same cut one token longer, not gathered. A model without a cache,
# tp above the KV heads and --onnx without --tp are one-line refusals with nothing written.
# Usage: bash serve_onnx.sh SYMTENSOR_BINARY SOURCE_ROOT
set -euo pipefail
symtensor="$1"
root="$2"
# shellcheck source=lib/ort_checks.sh
source "$root/tests/scripts/lib/ort_checks.sh"

/usr/bin/python3 "$root/tests/scripts/exporters/export_decode_steps.py" "$work/models" >"$work/export.log" 2>&1 \
  || { cat "$work/export.log" >&2; fail "export_decode_steps.py failed"; }

# check_cache DIR KV_HEADS TP REPLICAS PP: every rank file's cache inputs and outputs by hand.
check_cache() {
  /usr/bin/python3 - "$@" <<'PY' || fail "$1: cache shapes"
import glob, json, os, sys
import onnx
d, heads, tp, replicas, pp = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
batch, past, head_dim = 4, 8, 16  # the --bind and the exporter's head dim
files = sorted(glob.glob(os.path.join(d, "stage_*.onnx")))
assert len(files) == tp * pp, f"{len(files)} rank files for tp={tp} pp={pp}: {files}"
want_in = [batch // replicas, heads // tp, past, head_dim]
want_out = [batch // replicas, heads // tp, past + 1, head_dim]
holders = {}
for f in files:
    g = onnx.load(f).graph
    shape = lambda v: [x.dim_value for x in v.type.tensor_type.shape.dim]
    ins = {v.name: shape(v) for v in g.input}
    outs = {v.name: shape(v) for v in g.output}
    for layer in (0, 1):
        for kind in ("key", "value"):
            past_name, present_name = f"past_{kind}_{layer}", f"present_{kind}_{layer}"
            if past_name not in ins:
                continue
            holders[past_name] = holders.get(past_name, 0) + 1
            assert ins[past_name] == want_in, f"{f}: {past_name} {ins[past_name]} != {want_in}"
            assert outs.get(present_name) == want_out, f"{f}: {present_name} {outs} != {want_out}"
    gathered = [n.output[0] for n in g.node if n.op_type == "AllGather" and "present" in n.output[0]]
    assert not gathered, f"{f}: the cache is gathered: {gathered}"
# every layer's cache on the tp ranks of one stage
assert holders == {f"past_{k}_{l}": tp for k in ("key", "value") for l in (0, 1)}, holders
kept = json.load(open(os.path.join(d, "manifest.json")))["kept_outputs"]
assert kept == {f"present_{k}_{l}": f"past_{k}_{l}" for k in ("key", "value") for l in (0, 1)}, kept
print(f"{d}: {len(files)} rank files hold past {want_in}, present {want_out}")
PY
}

# run NAME KV_HEADS TP REPLICAS [PP]
run() {
  local name="$1" heads="$2" tp="$3" replicas="$4" pp="${5:-1}" dir="$work/out_$1_$3_$4_${5:-1}"
  "$symtensor" serve "$work/models/$name.onnx" --cluster dgx-a100 --tp "$tp" --replicas "$replicas" --pp "$pp" \
    --bind batch=4,seq=1,past_seq=8 --onnx -o "$dir" >"$work/serve.log" 2>&1 \
    || { cat "$work/serve.log" >&2; fail "$name tp=$tp replicas=$replicas: serve --onnx failed"; }
  grep -q "past_key_0 .*\[$((4 / replicas)),$((heads / tp)),8,16\] of \[4,$heads,8,16\]" "$work/serve.log" \
    || { cat "$work/serve.log" >&2; fail "$name: the printed cache cut"; }
  "$symtensor" verify "$work/models/$name.onnx" "$dir" --rtol 1e-4 >"$work/verify.log" 2>&1 \
    || { cat "$work/verify.log" >&2; fail "$name tp=$tp replicas=$replicas: verify failed"; }
  grep -q "verify: OK" "$work/verify.log" || fail "$name: no OK line"
  for out in present_key_0 present_value_1; do
    grep -q "^  $out: .* OK" "$work/verify.log" || { cat "$work/verify.log" >&2; fail "$name: $out not compared"; }
  done
  check_cache "$dir" "$heads" "$tp" "$replicas" "$pp"
  echo "$name tp=$tp replicas=$replicas pp=$pp: OK, $(grep -o 'max rel [0-9.e+-]*' "$work/verify.log" | sort -t' ' -k3 -g | tail -1)"
}
run gpt2_kv_cache 4 2 1
run gpt2_kv_cache 4 4 1
run gpt2_kv_cache 4 2 2
run gpt2_kv_cache 4 2 1 2
run llama_gqa_step 2 2 1
# Its KV heads are read from the k/v projections' width (32 = 2 heads of 16), not from the
# attention's K, which repeat_kv's Expand + Reshape widens to the 4 query heads: the cache is
# 2 (K and V) x 2 layers x 2 KV heads x 16 dims x 2 bytes (bf16) = 256 B per token.
"$symtensor" serve "$work/models/llama_gqa_step.onnx" --cluster dgx-a100 --bind batch=4,seq=1,past_seq=8 \
  --input-len 8 --output-len 4 >"$work/serve.log" 2>&1 || { cat "$work/serve.log" >&2; fail "llama_gqa_step: serve"; }
grep -q " 4 heads, 2 KV heads of 16," "$work/serve.log" && grep -q "^KV cache *256 B per token per GPU," "$work/serve.log" \
  || { cat "$work/serve.log" >&2; fail "llama_gqa_step: not 2 KV heads of 16 (256 B per token)"; }

# `models --decode-step` (LLaMA family; llama3-8b-tiny: 4 query heads, 2 KV heads of 16): run
# token by token from an empty cache it gives the whole model's causal logits, and it shards.
"$symtensor" models llama3-8b-tiny -o "$work/models/llama3_whole.onnx" >/dev/null
"$symtensor" models llama3-8b-tiny --decode-step -o "$work/models/llama3_step.onnx" >"$work/models.log" \
  || { cat "$work/models.log" >&2; fail "models --decode-step"; }
grep -q "decode step (KV cache in and out)" "$work/models.log" || fail "models --decode-step does not say so"
mkdir -p "$work/chain"
/usr/bin/python3 "$root/tests/scripts/decode_step_chain.py" "$root/scripts/ort/run.js" "$work/models/llama3_whole.onnx" \
  "$work/models/llama3_step.onnx" "$work/chain" 2 16 || fail "llama3 decode steps differ from the whole forward"
"$symtensor" serve "$work/models/llama3_step.onnx" --cluster dgx-a100 --tp 2 --bind batch=4,past_seq=8 --onnx \
  -o "$work/llama3_tp2" >"$work/serve.log" 2>&1 || { cat "$work/serve.log" >&2; fail "llama3 step: serve --onnx"; }
"$symtensor" verify "$work/models/llama3_step.onnx" "$work/llama3_tp2" >"$work/verify.log" 2>&1 && grep -q "verify: OK" "$work/verify.log" \
  || { cat "$work/verify.log" >&2; fail "llama3 step tp=2: verify"; }
check_cache "$work/llama3_tp2" 2 2 1 1
# A mixture of experts (mixtral-8x7b-tiny: 4 experts, top-2) with its experts over the tp group (--ep 2).
"$symtensor" models mixtral-8x7b-tiny --decode-step -o "$work/models/mixtral_step.onnx" >/dev/null
"$symtensor" serve "$work/models/mixtral_step.onnx" --cluster dgx-a100 --tp 2 --ep 2 --bind batch=4,past_seq=8 --onnx \
  -o "$work/mixtral_ep2" >"$work/serve.log" 2>&1 || { cat "$work/serve.log" >&2; fail "mixtral step: serve --onnx --ep 2"; }
"$symtensor" verify "$work/models/mixtral_step.onnx" "$work/mixtral_ep2" >"$work/verify.log" 2>&1 && grep -q "verify: OK" "$work/verify.log" \
  || { cat "$work/verify.log" >&2; fail "mixtral step tp=2 ep=2: verify"; }
check_cache "$work/mixtral_ep2" 2 2 1 1
if "$symtensor" models gpt-1.7b-tiny --decode-step -o "$work/gpt_step.onnx" >"$work/err.log" 2>&1; then fail "gpt --decode-step accepted"; fi
grep -q "decode-step is written for the llama family" "$work/err.log" && [ ! -e "$work/gpt_step.onnx" ] || fail "gpt --decode-step: $(cat "$work/err.log")"

# Without --bind: the cache length is --input-len, the batch one request per replica.
"$symtensor" serve "$work/models/gpt2_kv_cache.onnx" --cluster dgx-a100 --tp 2 --replicas 2 --input-len 8 --onnx \
  -o "$work/default" >"$work/serve.log" 2>&1 || { cat "$work/serve.log" >&2; fail "default bindings"; }
grep -q "bound batch=2,past_seq=8,seq=1" "$work/serve.log" || { cat "$work/serve.log" >&2; fail "default bindings not printed"; }
"$symtensor" verify "$work/models/gpt2_kv_cache.onnx" "$work/default" >"$work/verify.log" 2>&1 && grep -q "verify: OK" "$work/verify.log" \
  || { cat "$work/verify.log" >&2; fail "default bindings: verify"; }

# refusals: one line, non-zero exit, nothing written
refuse() {
  local want="$1"; shift
  if "$symtensor" serve "$@" >"$work/err.log" 2>&1; then fail "accepted: $*"; fi
  [ "$(wc -l <"$work/err.log")" -eq 1 ] || { cat "$work/err.log" >&2; fail "not one line: $*"; }
  grep -q "$want" "$work/err.log" || { cat "$work/err.log" >&2; fail "no '$want': $*"; }
  [ ! -e "$work/refused" ] || fail "output left by: $*"
}
refuse "is not a decode step" "$(model_file torch:gpt_tiny)" --cluster dgx-a100 --tp 2 --bind batch=2,seq=8 --onnx -o "$work/refused"
refuse "tp must divide its KV heads" "$work/models/llama_gqa_step.onnx" --cluster dgx-a100 --tp 4 --bind batch=4,seq=1,past_seq=8 \
  --onnx -o "$work/refused"
refuse "give --tp" "$work/models/gpt2_kv_cache.onnx" --cluster dgx-a100 --input-len 8 --onnx -o "$work/refused"
refuse "needs -o DIR" "$work/models/gpt2_kv_cache.onnx" --cluster dgx-a100 --tp 2 --input-len 8 --onnx
echo "serve_onnx: OK"
