"""Checks the zoo's capacity-routed MoE layer against a loop-by-loop numpy reference.

Usage: python3 moe_reference.py MODEL.onnx RUNNER_JS WORK_DIR CAPACITY_FACTOR BATCH SEQ

Extracts layer 0's MoE (normed hidden state in, combined expert output out) from MODEL,
runs it in ONNX Runtime through RUNNER_JS, and recomputes it token by token: top-k of the
router logits, softmax of the k logits, each expert taking tokens in sequence order
until it holds C = ceil(cf * k * seq / E) of them, SwiGLU experts, weighted sum. Prints
how many (token, expert) assignments were dropped; exits 1 on a mismatch.
"""
import json
import math
import subprocess
import sys

import numpy as np
import onnx
import onnx.numpy_helper
import onnx.utils


def find_einsum(graph, equation, layer):
    for node in graph.node:
        eq = next((a.s.decode() for a in node.attribute if a.name == "equation"), None)
        if node.op_type == "Einsum" and eq == equation and f"/layers.{layer}/" in node.name + node.output[0]:
            return node
    sys.exit(f"FAIL: no Einsum {equation} in layer {layer}")


def main():
    model_path, runner, work, cf, batch, seq = sys.argv[1:7]
    cf, batch, seq = float(cf), int(batch), int(seq)
    model = onnx.load(model_path)
    dispatch = find_einsum(model.graph, "bsec,bsh->bech", 0)
    combine = find_einsum(model.graph, "bsec,bech->bsh", 0)
    x_name, y_name = dispatch.input[1], combine.output[0]
    sub_path = f"{work}/moe_layer.onnx"
    onnx.utils.extract_model(model_path, sub_path, [x_name], [y_name])
    subprocess.run(["node", runner, "run", sub_path, "--bind", f"batch={batch},seq={seq}", "--quiet",
                    "--save-inputs", f"{work}/moe_in.json", "--output", f"{work}/moe_out.json"], check=True)

    weights = {t.name: onnx.numpy_helper.to_array(t).astype(np.float64) for t in model.graph.initializer}
    def param(leaf):
        return weights[f"model.layers.0.block_sparse_moe.{leaf}"]
    gate, w1, w3, w2 = param("gate.weight"), param("experts.w1"), param("experts.w3"), param("experts.w2")
    experts = gate.shape[1]
    top_k = int(next(p.value for p in model.metadata_props if p.key == "symtensor.moe.top_k"))
    capacity = math.ceil(cf * top_k * seq / experts)

    x_json = json.load(open(f"{work}/moe_in.json"))[x_name]
    x = np.array(x_json["data"], dtype=np.float64).reshape(x_json["shape"])
    y_json = json.load(open(f"{work}/moe_out.json"))["outputs"][y_name]
    y = np.array(y_json["data"], dtype=np.float64).reshape(y_json["shape"])
    if list(y.shape) != [batch, seq, x.shape[2]]:
        sys.exit(f"FAIL: output shape {list(y.shape)}")

    def silu(v):
        return v / (1 + np.exp(-v))

    expected = np.zeros_like(y)
    dense = np.zeros_like(y)  # the same routing without a capacity
    dropped = 0
    for b in range(batch):
        held = [0] * experts
        for t in range(seq):
            logits = x[b, t] @ gate
            chosen = np.argsort(-logits)[:top_k]
            p = np.exp(logits[chosen] - logits[chosen].max())
            p /= p.sum()
            for weight, e in zip(p, chosen):
                out = (silu(x[b, t] @ w1[e]) * (x[b, t] @ w3[e])) @ w2[e]
                dense[b, t] += weight * out
                if held[e] < capacity:
                    held[e] += 1
                    expected[b, t] += weight * out
                else:
                    dropped += 1
    error = np.abs(y - expected).max()
    scale = np.abs(expected).max()
    print(f"capacity factor {cf}: C = {capacity}, {dropped} of {batch * seq * top_k} assignments dropped, "
          f"max |ORT - reference| = {error:.2e} (values up to {scale:.2f})")
    if not error <= 1e-5 + 1e-4 * scale:
        sys.exit("FAIL: ONNX Runtime differs from the numpy reference")
    if dropped and not np.abs(y - dense).max() > 1e-3 * scale:
        sys.exit("FAIL: tokens beyond capacity were not dropped")
    print(json.dumps({"capacity": capacity, "dropped": dropped}))


if __name__ == "__main__":
    main()
