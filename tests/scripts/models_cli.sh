#!/usr/bin/env bash
# `symtensor models`: listing, writing, and its error messages.
# Usage: bash models_cli.sh SYMTENSOR_BINARY SOURCE_ROOT
set -euo pipefail
symtensor="$1"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# Listed into files: grep -q closing a pipe early would kill the (longer than a pipe
# buffer) listing with SIGPIPE under pipefail.
"$symtensor" models list >"$work/list"
"$symtensor" models list --names >"$work/names"
grep -q '^gpt-1.7b ' "$work/list" || fail "list lacks gpt-1.7b"
grep -qx 'mixtral-8x7b-tiny' "$work/names" || fail "list --names lacks mixtral-8x7b-tiny"
for name in llama3-8b llama3.1-405b mistral-7b mixtral-8x22b qwen2.5-7b qwen2.5-72b qwen3-8b qwen3-32b qwen3-30b-a3b qwen3-235b-a22b deepseek-v3 deepseek-v2-lite deepseek-v3-tiny; do
  grep -qx "$name" "$work/names" || fail "list --names lacks $name"
done
grep -q "meta-llama/Meta-Llama-3-8B config.json" "$work/list" || fail "list does not name the llama3-8b source"

out="$("$symtensor" models llama2-70b -o "$work/l.onnx")"
grep -q "68976648192 parameters" <<<"$out" || fail "llama2-70b summary: $out"
[ -s "$work/l.onnx" ] || fail "no file written"
[ ! -e "$work/l.onnx.tmp" ] || fail "temporary file left behind"
/usr/bin/python3 -c "import onnx,sys; m=onnx.load(sys.argv[1]); onnx.checker.check_model(m); onnx.shape_inference.infer_shapes(m, strict_mode=True)" "$work/l.onnx" 2>/dev/null \
  || [ ! -x /usr/bin/python3 ] || fail "python onnx rejects llama2-70b"

out="$("$symtensor" models gpt-1.7b --layers 2 --hidden 128 --heads 4 -o "$work/g.onnx")" || fail "overrides not applied"
grep -q "2 layers, hidden 128, 4 heads, mlp 512" <<<"$out" || fail "overrides not applied"

# a family name takes overrides
out="$("$symtensor" models gpt --layers 3 --hidden 128 --heads 4 -o "$work/f.onnx")" \
  || fail "models gpt --layers 3 was not written with the overrides"
grep -q "3 layers, hidden 128, 4 heads" <<<"$out" || fail "models gpt --layers 3 was not written with the overrides"
[ -s "$work/f.onnx" ] || fail "models gpt: no file"

expect_error() {  # expect_error PATTERN ARGS...
  local pattern="$1"; shift
  local err
  if err="$("$symtensor" "$@" 2>&1)"; then fail "expected failure: $*"; fi
  grep -q -- "$pattern" <<<"$err" || fail "'$*' said: $err"
}
expect_error "unknown model 'gpt-2b'" models gpt-2b -o "$work/x.onnx"
expect_error "-o FILE.onnx" models gpt-1.7b
expect_error "multiple of heads" models gpt-1.7b --heads 7 -o "$work/x.onnx"
expect_error "llama family" models bert-large --experts 4 -o "$work/x.onnx"
expect_error "--weights" models gpt-1.7b --weights all -o "$work/x.onnx"
expect_error "random weights are limited" models gpt-1.7b --weights random -o "$work/x.onnx"
expect_error "cannot" models gpt-1.7b-tiny -o "$work/missing_dir/x.onnx"
echo "models_cli: OK"
