#!/usr/bin/python3
"""A decode step with its KV cache (`symtensor models NAME --decode-step`) computes what the whole
model computes: the step run token by token from an empty cache in ONNX Runtime (scripts/ort),
each step's present keys/values fed back as the next one's past, gives at every position the
logits of one causal forward of the whole sequence (same preset, same seeded weights).
Usage: decode_step_chain.py RUN_JS WHOLE.onnx STEP.onnx WORK_DIR KV_HEADS HEAD_DIM
"""
import json
import os
import subprocess
import sys

import numpy as np

run_js, full, step, work = sys.argv[1:5]
kv, head_dim = int(sys.argv[5]), int(sys.argv[6])
T, vocab = 5, 128
rng = np.random.default_rng(0)
tokens = rng.integers(0, vocab, T).tolist()


def run(model, inputs, bind):
    fi, fo = os.path.join(work, "in.json"), os.path.join(work, "out.json")
    json.dump(inputs, open(fi, "w"))
    subprocess.run(["node", run_js, "run", model, "--inputs", fi, "--output", fo, "--bind", bind, "--quiet"], check=True)
    return {k: np.array(v["data"], dtype=np.float64).reshape(v["shape"]) for k, v in json.load(open(fo))["outputs"].items()}


t64 = lambda shape, data: {"dtype": "int64", "shape": shape, "data": data}
f32 = lambda a: {"dtype": "float32", "shape": list(a.shape), "data": a.reshape(-1).tolist()}
whole = run(full, {"input_ids": t64([1, T], tokens), "position_ids": t64([1, T], list(range(T)))}, f"batch=1,seq={T}")["logits"]
cache = {f"past_{k}_{l}": np.zeros((1, kv, 0, head_dim)) for k in ("key", "value") for l in (0, 1)}
worst = 0.0
for t in range(T):
    inputs = {"input_ids": t64([1, 1], [tokens[t]]), "position_ids": t64([1, 1], [t])}
    inputs.update({n: f32(a) for n, a in cache.items()})
    out = run(step, inputs, f"batch=1,past_seq={t},present_seq={t + 1}")
    diff = np.abs(out["logits"][0, 0] - whole[0, t]).max()
    worst = max(worst, diff / np.abs(whole[0, t]).max())
    assert np.allclose(out["logits"][0, 0], whole[0, t], rtol=1e-4, atol=1e-5), f"token {t}: max diff {diff}"
    cache = {n: out[n.replace("past", "present")] for n in cache}
    assert cache["past_key_0"].shape == (1, kv, t + 1, head_dim)
print(f"decode steps chained over {T} tokens match the whole forward's logits (max rel {worst:.2e})")
