#!/usr/bin/python3
"""Exports decode steps with their KV cache (one new token, past keys/values in, present out),
for `symtensor serve --onnx` (tests/scripts/serve_onnx.sh), with Debian's PyTorch:

- gpt2_kv_cache: export_models.py's GPT-2 step (4 heads, 2 layers, fused QKV);
- llama_gqa_step: the HF-style LLaMA block of export_models.py run with a cache as HF's
  modeling code runs it: RoPE at the positions after the cache, the new key and value
  concatenated to the past ones before repeat_kv (the cache holds the 2 KV heads, not the 4
  query heads), 2 layers.

Usage: export_decode_steps.py OUT_DIR -> OUT_DIR/<name>.onnx and OUT_DIR/models.txt, one line
per model: name, the --bind text, the KV heads of its cache.
"""
import math
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export_models import Gpt2Step, LlamaBlock, RMSNorm, rotate_half, export  # noqa: E402


class LlamaStepBlock(LlamaBlock):
    def forward(self, x, position_ids, past_k, past_v):
        b, s, _ = x.shape
        hs = self.input_layernorm(x)
        q = self.q_proj(hs).view(b, s, self.heads, self.d).transpose(1, 2)
        k = self.k_proj(hs).view(b, s, self.kv, self.d).transpose(1, 2)
        v = self.v_proj(hs).view(b, s, self.kv, self.d).transpose(1, 2)
        freqs = position_ids[:, :, None].float() * self.inv_freq[None, None, :]
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos()[:, None], emb.sin()[:, None]
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        k = torch.cat((past_k, k), dim=-2)  # DynamicCache.update: the present key
        v = torch.cat((past_v, v), dim=-2)
        kr, vr = self.repeat_kv(k), self.repeat_kv(v)
        attn = torch.softmax(q @ kr.transpose(2, 3) / math.sqrt(self.d), dim=-1) @ vr  # one query: no mask
        x = x + self.o_proj(attn.transpose(1, 2).reshape(b, s, -1))
        hs = self.post_attention_layernorm(x)
        return x + self.down_proj(F.silu(self.gate_proj(hs)) * self.up_proj(hs)), k, v


class LlamaStep(nn.Module):
    def __init__(self, vocab=128, h=64, layers=2):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, h)
        self.layers = nn.ModuleList([LlamaStepBlock(h, heads=4, kv_heads=2) for _ in range(layers)])
        self.norm = RMSNorm(h)
        self.lm_head = nn.Linear(h, vocab, bias=False)

    def forward(self, input_ids, past_key_0, past_value_0, past_key_1, past_value_1):
        past = [(past_key_0, past_value_0), (past_key_1, past_value_1)]
        start = past_key_0.shape[2]
        position_ids = torch.arange(start, start + input_ids.shape[1]).unsqueeze(0)
        x = self.embed_tokens(input_ids)
        present = []
        for layer, (pk, pv) in zip(self.layers, past):
            x, k, v = layer(x, position_ids, pk, pv)
            present += [k, v]
        return (self.lm_head(self.norm(x)), *present)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    ids = torch.randint(0, 128, (2, 1))
    names = ["past_key_0", "past_value_0", "past_key_1", "past_value_1"]
    outputs = ["logits", "present_key_0", "present_value_0", "present_key_1", "present_value_1"]
    axes = {"input_ids": {0: "batch", 1: "seq"}}
    axes.update({n: {0: "batch", 2: "past_seq"} for n in names})
    lines = []
    gpt2_past = [torch.randn(2, 4, 8, 16) for _ in names]
    lines.append(export(out, "gpt2_kv_cache", Gpt2Step(), (ids, *gpt2_past), ["input_ids", *names], outputs, axes,
                        "batch=4,seq=1,past_seq=8", "4"))
    llama_past = [torch.randn(2, 2, 8, 16) for _ in names]
    lines.append(export(out, "llama_gqa_step", LlamaStep(), (ids, *llama_past), ["input_ids", *names], outputs, axes,
                        "batch=4,seq=1,past_seq=8", "2"))
    with open(os.path.join(out, "models.txt"), "w") as f:
        f.writelines(lines)


if __name__ == "__main__":
    main()
