#!/usr/bin/env bash
# `inspect` on an exporter's ONNX that names a dim per tensor (as tf2onnx's unk__N and
# PyTorch's dynamic axes do, thousands in a deep model): the aliases print one line per
# value, the first names in natural order and how many more; --json keeps every name.
# Usage: bash inspect_cli.sh SYMTENSOR_BINARY SOURCE_ROOT
set -euo pipefail
symtensor="$1"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

/usr/bin/python3 - "$work/named.onnx" <<'PY'
import sys
import onnx
from onnx import TensorProto, helper

# x[batch, 8] -> 11 Relus; each output's dim 0 named unk__1..unk__11 (value_info and the
# output), dim 1 of the output w_11.
nodes, infos, prev = [], [], "x"
for k in range(1, 12):
    out = f"t{k}"
    nodes.append(helper.make_node("Relu", [prev], [out]))
    infos.append(helper.make_tensor_value_info(out, TensorProto.FLOAT, [f"unk__{k}", "w_11" if k == 11 else 8]))
    prev = out
graph = helper.make_graph(nodes, "named", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 8])],
                          [infos[-1]], value_info=infos[:-1])
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), sys.argv[1])
PY

out="$("$symtensor" inspect "$work/named.onnx")"
aliases="$(awk '/^aliases/{on=1; next} on && /^  /{print; next} {on=0}' <<<"$out")"
fail() { echo "FAIL: $1"; echo "$out"; exit 1; }
[ "$(wc -l <<<"$aliases")" -eq 2 ] || fail "expected one aliases line per value (batch, 8), got: $aliases"
grep -qx '  batch: unk__1, unk__2, unk__3, unk__4 and 7 more' <<<"$aliases" || fail "batch line"
grep -qx '  8: w_11' <<<"$aliases" || fail "8 line"
json="$("$symtensor" inspect "$work/named.onnx" --json)"
count="$(/usr/bin/python3 -c 'import json,sys; print(len(json.load(sys.stdin)["aliases"]))' <<<"$json")"
[ "$count" -eq 12 ] || fail "--json lists $count aliases, expected 12"
echo "inspect_cli: aliases grouped by value (2 lines for 12 names), --json lists all 12"
