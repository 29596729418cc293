#!/usr/bin/env bash
# `symtensor serve`: the JSON carries the named means and percentiles; TPOT at concurrency 1
# equals the batch-1 decode step the text prints (to its printed digits, near); a faster
# arrival rate beyond capacity lengthens TTFT; bad traces, an unknown engine and a layout the
# model cannot take are one-line errors with a non-zero exit; the layout search answers.
# Usage: bash serve_cli.sh SYMTENSOR_BINARY SOURCE_ROOT
set -euo pipefail
symtensor="$1"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
"$symtensor" models llama2-7b -o "$work/m.onnx" >/dev/null
cl="--cluster dgx-h100 --nodes 1 --gpus 1"

json="$("$symtensor" serve "$work/m.onnx" $cl --tp 1 --input-len 256 --output-len 64 --requests 50 --json)"
for key in ttft_s tpot_s output_tokens_per_s ttft_p50_s ttft_p90_s ttft_p99_s tpot_p99_s itl_s e2e_p90_s output_tokens_per_s_per_gpu; do
  grep -q "\"$key\":" <<<"$json" || fail "--json lacks $key: $json"
done

# closed loop of one: TPOT is the batch-1 decode step (context 256..320 vs the 1k the text quotes: within 5%)
text="$("$symtensor" serve "$work/m.onnx" $cl --tp 1 --input-len 256 --output-len 64 --concurrency 1 --requests 3)"
step="$(echo "$text" | sed -n 's/^decode .*context: \([0-9.]*\) ms a step.*/\1/p')"
tpot="$(echo "$text" | awk '/^  TPOT/ {print $3}')"
[ -n "$step" ] && [ -n "$tpot" ] || fail "no decode step or TPOT: $text"
awk -v a="$step" -v b="$tpot" 'BEGIN { exit !(b / a > 0.95 && b / a < 1.05) }' || fail "TPOT $tpot ms vs decode step $step ms"

# beyond capacity the queue grows: more requests, longer mean TTFT
ttft() { "$symtensor" serve "$work/m.onnx" $cl --tp 1 --input-len 512 --output-len 128 --rate 500 --requests "$1" --json \
  | sed -n 's/^  "ttft_s": \([0-9.e+-]*\),*/\1/p'; }
small="$(ttft 200)"; large="$(ttft 800)"
awk -v a="$small" -v b="$large" 'BEGIN { exit !(b > 2 * a) }' || fail "TTFT did not grow beyond capacity: $small -> $large"

# errors: one line, non-zero exit, the file and line named
printf '0,10,10\n1,x,10\n' > "$work/bad.csv"
if "$symtensor" serve "$work/m.onnx" $cl --tp 1 --trace "$work/bad.csv" 2>"$work/err" >/dev/null; then fail "a bad trace was accepted"; fi
grep -q "bad.csv:2: " "$work/err" && [ "$(wc -l < "$work/err")" = 1 ] || fail "trace error: $(cat "$work/err")"
if "$symtensor" serve "$work/m.onnx" $cl --tp 1 --input-len 8 --output-len 8 --stack vlm 2>"$work/err" >/dev/null; then fail "unknown engine accepted"; fi
grep -q "did you mean 'vllm'" "$work/err" || fail "engine error: $(cat "$work/err")"
if "$symtensor" serve "$work/m.onnx" --cluster dgx-h100 --nodes 1 --tp 3 --input-len 8 --output-len 8 2>"$work/err" >/dev/null; then
  fail "tp=3 accepted"; fi
grep -q "does not divide the model's 32 attention heads" "$work/err" || fail "tp error: $(cat "$work/err")"

# the search: a layout meets loose SLOs on one node
out="$("$symtensor" serve "$work/m.onnx" --cluster dgx-h100 --nodes 1 --rate 5 --input-len 512 --output-len 64 --slo-ttft 1 --slo-tpot 0.1)"
grep -q "fewest GPUs" <<<"$out" || fail "the search found no layout: $out"
# --export: the launch script (and TRT-LLM's options file) written; a layout the engine cannot say
# is refused in one line and leaves no file
"$symtensor" serve "$work/m.onnx" --cluster dgx-h100 --nodes 1 --tp 2 --replicas 2 --input-len 64 --output-len 8 --requests 4 \
  --export vllm -o "$work/vllm.sh" >/dev/null 2>&1 || fail "--export vllm failed"
grep -q -- "--tensor-parallel-size 2" "$work/vllm.sh" && grep -q -- "--data-parallel-size 2" "$work/vllm.sh" || fail "vllm: $(cat "$work/vllm.sh")"
bash -n "$work/vllm.sh" || fail "vllm.sh is not bash"
"$symtensor" serve "$work/m.onnx" --cluster dgx-h100 --nodes 1 --tp 2 --input-len 64 --output-len 8 --requests 4 \
  --export trtllm -o "$work/trt.sh" >/dev/null 2>&1 || fail "--export trtllm failed"
grep -q "moe_tensor_parallel_size: 2" "$work/trt.sh.llm_api_options.yaml" || fail "trtllm options: $(cat "$work/trt.sh.llm_api_options.yaml")"
if "$symtensor" serve "$work/m.onnx" --cluster dgx-h100 --nodes 1 --tp 2 --replicas 2 --input-len 64 --output-len 8 \
  --export trtllm -o "$work/no.sh" 2>"$work/err" >/dev/null; then fail "trtllm took replicas"; fi
[ "$(wc -l < "$work/err")" = 1 ] && grep -q "no data-parallel flag" "$work/err" || fail "trtllm replicas: $(cat "$work/err")"
[ ! -e "$work/no.sh" ] && [ ! -e "$work/no.sh.llm_api_options.yaml" ] || fail "a refused export left a file"

# --disaggregate: both pools, the KV transfer priced, the metrics keys
json="$("$symtensor" serve "$work/m.onnx" --cluster dgx-h100 --nodes 1 --disaggregate --prefill-tp 2 --decode-tp 2 \
  --decode-replicas 2 --input-len 512 --output-len 64 --rate 5 --requests 50 --json)"
for key in ttft_s tpot_s kv_transfer prefill decode; do grep -q "\"$key\":" <<<"$json" || fail "disaggregated --json lacks $key"; done
echo "serve_cli: ok"
