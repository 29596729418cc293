#!/usr/bin/python3
"""Writes models whose weights live outside the .onnx file, as exporters write large models.

Usage: external_data.py OUT_DIR
- big.onnx + big.onnx_data: a 2-layer MLP of 3.2 GB of float32 weights in one side file (HF
  Optimum's layout past 2 GB). The side file is sparse (written with truncate): planning
  must locate the weights and never read them.
- small.onnx with one file per tensor (onnx's save_as_external_data with
  all_tensors_to_one_file=False), real random weights, for a sharded write and verify.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def mlp(hidden, inner, make_weight):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", hidden])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", hidden])
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"], name="fc1"),
             helper.make_node("Relu", ["h"], ["a"], name="act"),
             helper.make_node("MatMul", ["a", "w2"], ["y"], name="fc2")]
    inits = [make_weight("w1", [hidden, inner]), make_weight("w2", [inner, hidden])]
    graph = helper.make_graph(nodes, "mlp", [x], [y], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    # Big: external entries written by hand into one sparse side file.
    hidden, inner = 8192, 49152  # 2 x 8192 x 49152 x 4 B = 3.2 GB
    offset = [0]

    def external(name, dims):
        t = TensorProto()
        t.name, t.data_type = name, TensorProto.FLOAT
        t.dims.extend(dims)
        length = int(np.prod(dims)) * 4
        t.data_location = TensorProto.EXTERNAL
        for key, value in (("location", "big.onnx_data"), ("offset", str(offset[0])), ("length", str(length))):
            entry = t.external_data.add()
            entry.key, entry.value = key, value
        offset[0] += length
        return t

    big = mlp(hidden, inner, external)
    onnx.save(big, os.path.join(out, "big.onnx"))
    with open(os.path.join(out, "big.onnx_data"), "wb") as f:
        f.truncate(offset[0])
    # Small: real weights, one file per tensor.
    rng = np.random.default_rng(0)
    small = mlp(16, 32, lambda name, dims: numpy_helper.from_array(rng.uniform(-0.5, 0.5, dims).astype(np.float32), name))
    onnx.save_model(small, os.path.join(out, "small.onnx"), save_as_external_data=True, all_tensors_to_one_file=False,
                    size_threshold=0)


if __name__ == "__main__":
    main()
