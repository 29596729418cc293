#!/usr/bin/python3
"""Writes small hand-made ONNX seeds for fuzz_onnx_import into corpus/onnx_import/.

Each exercises one importer path: symbolic dims, an exporter-style Reshape shape
sub-graph, attribute vs input forms (opset 11 vs 13), a convolution block, a weight held
in a Constant node, control flow, and an unknown domain. The zoo's tiny models are added
by `symtensor models NAME-tiny --weights none --layers 1` (see README.md).
Run with Debian's python: /usr/bin/python3 tests/fuzz/make_onnx_seeds.py
"""
import os
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "onnx_import")
os.makedirs(out, exist_ok=True)


def save(name, nodes, inputs, outputs, inits=(), opset=17, metadata=None):
    graph = helper.make_graph(nodes, name, inputs, outputs, initializer=list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="seed")
    model.ir_version = 8
    for k, v in (metadata or {}).items():
        model.metadata_props.append(onnx.StringStringEntryProto(key=k, value=v))
    onnx.checker.check_model(model)
    with open(os.path.join(out, name + ".onnx"), "wb") as f:
        f.write(model.SerializeToString())


F = TensorProto.FLOAT
I64 = TensorProto.INT64

# MatMul with a weight input named in symtensor.parameters, symbolic batch/seq.
save("matmul_param",
     [helper.make_node("MatMul", ["x", "w"], ["y"])],
     [helper.make_tensor_value_info("x", F, ["batch", "seq", 8]), helper.make_tensor_value_info("w", F, [8, 4])],
     [helper.make_tensor_value_info("y", F, ["batch", "seq", 4])],
     metadata={"symtensor.parameters": "w"})

# Shape -> Gather -> Unsqueeze -> Concat -> Reshape, as PyTorch writes it.
idx0 = numpy_helper.from_array(np.array(0, dtype=np.int64), "i0")
idx1 = numpy_helper.from_array(np.array(1, dtype=np.int64), "i1")
axes0 = numpy_helper.from_array(np.array([0], dtype=np.int64), "axes0")
tail = numpy_helper.from_array(np.array([2, 4], dtype=np.int64), "tail")
save("reshape_subgraph",
     [helper.make_node("Shape", ["x"], ["s"]),
      helper.make_node("Gather", ["s", "i0"], ["b"], axis=0),
      helper.make_node("Gather", ["s", "i1"], ["t"], axis=0),
      helper.make_node("Unsqueeze", ["b", "axes0"], ["bu"]),
      helper.make_node("Unsqueeze", ["t", "axes0"], ["tu"]),
      helper.make_node("Concat", ["bu", "tu", "tail"], ["target"], axis=0),
      helper.make_node("Reshape", ["x", "target"], ["y"]),
      helper.make_node("Transpose", ["y"], ["z"], perm=[0, 2, 1, 3]),
      helper.make_node("Softmax", ["z"], ["p"], axis=-1)],
     [helper.make_tensor_value_info("x", F, ["batch", "seq", 8])],
     [helper.make_tensor_value_info("p", F, ["batch", 2, "seq", 4])],
     inits=[idx0, idx1, axes0, tail])

# Opset 11 attribute forms: Split(split=...), Squeeze(axes=...), ReduceSum(axes=...).
save("opset11_attributes",
     [helper.make_node("Split", ["x"], ["a", "b"], axis=2, split=[3, 5]),
      helper.make_node("ReduceSum", ["a"], ["r"], axes=[2], keepdims=1),
      helper.make_node("Squeeze", ["r"], ["q"], axes=[2]),
      helper.make_node("Unsqueeze", ["q"], ["u"], axes=[2]),
      helper.make_node("Mul", ["u", "b"], ["y"])],
     [helper.make_tensor_value_info("x", F, ["batch", 4, 8])],
     [helper.make_tensor_value_info("y", F, ["batch", 4, 5])], opset=11)

# Opset 13 input forms of the same.
split = numpy_helper.from_array(np.array([3, 5], dtype=np.int64), "split")
axes2 = numpy_helper.from_array(np.array([2], dtype=np.int64), "axes2")
save("opset13_inputs",
     [helper.make_node("Split", ["x", "split"], ["a", "b"], axis=2),
      helper.make_node("ReduceSum", ["a", "axes2"], ["r"], keepdims=1),
      helper.make_node("Squeeze", ["r", "axes2"], ["q"]),
      helper.make_node("Unsqueeze", ["q", "axes2"], ["u"]),
      helper.make_node("Mul", ["u", "b"], ["y"])],
     [helper.make_tensor_value_info("x", F, ["batch", 4, 8])],
     [helper.make_tensor_value_info("y", F, ["batch", 4, 5])], inits=[split, axes2], opset=13)

# Conv -> BatchNormalization -> Relu -> MaxPool -> GlobalAveragePool -> Flatten -> Gemm.
rng = np.random.default_rng(0)
conv_w = numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "conv_w")
bn = [numpy_helper.from_array(np.ones(4, np.float32), n) for n in ("scale", "bias", "mean", "var")]
fc_w = numpy_helper.from_array(rng.standard_normal((5, 4)).astype(np.float32), "fc_w")
fc_b = numpy_helper.from_array(np.zeros(5, np.float32), "fc_b")
save("conv_block",
     [helper.make_node("Conv", ["x", "conv_w"], ["c"], pads=[1, 1, 1, 1], strides=[1, 1]),
      helper.make_node("BatchNormalization", ["c", "scale", "bias", "mean", "var"], ["n"]),
      helper.make_node("Relu", ["n"], ["r"]),
      helper.make_node("MaxPool", ["r"], ["m"], kernel_shape=[2, 2], strides=[2, 2]),
      helper.make_node("GlobalAveragePool", ["m"], ["g"]),
      helper.make_node("Flatten", ["g"], ["f"], axis=1),
      helper.make_node("Gemm", ["f", "fc_w", "fc_b"], ["y"], transB=1)],
     [helper.make_tensor_value_info("x", F, ["batch", 3, 8, 8])],
     [helper.make_tensor_value_info("y", F, ["batch", 5])], inits=[conv_w, *bn, fc_w, fc_b])

# A weight held in a Constant node; LayerNormalization; Gather of an embedding.
table = numpy_helper.from_array(rng.standard_normal((10, 6)).astype(np.float32), "table_value")
gamma = numpy_helper.from_array(np.ones(6, np.float32), "gamma")
save("constant_weight",
     [helper.make_node("Constant", [], ["table"], value=table),
      helper.make_node("Gather", ["table", "ids"], ["e"], axis=0),
      helper.make_node("LayerNormalization", ["e", "gamma"], ["y"], axis=-1, epsilon=1e-5)],
     [helper.make_tensor_value_info("ids", I64, ["batch", "seq"])],
     [helper.make_tensor_value_info("y", F, ["batch", "seq", 6])], inits=[gamma])

# Control flow (If with two branches) and an op of an unknown domain: opaque nodes.
then_g = helper.make_graph([helper.make_node("Identity", ["x"], ["t"])], "then", [],
                           [helper.make_tensor_value_info("t", F, ["batch", 4])])
else_g = helper.make_graph([helper.make_node("Neg", ["x"], ["e"])], "else", [],
                           [helper.make_tensor_value_info("e", F, ["batch", 4])])
graph = helper.make_graph(
    [helper.make_node("If", ["cond"], ["y"], then_branch=then_g, else_branch=else_g),
     helper.make_node("Custom", ["y"], ["z"], domain="com.example")],
    "control", [helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
                helper.make_tensor_value_info("x", F, ["batch", 4])],
    [helper.make_tensor_value_info("z", F, ["batch", 4])])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.example", 1)])
model.ir_version = 8
with open(os.path.join(out, "control_flow_custom.onnx"), "wb") as f:
    f.write(model.SerializeToString())
