#!/usr/bin/python3
"""Exports models with Debian's PyTorch and torchvision the way their users do.

torch.onnx.export with dynamic axes on the inputs only (the exporter names every other
dim itself), some fully static, some with their batch dim under another name. Widths are
narrow so that the emulation of six ranks runs in seconds; the graphs are the libraries'
own (torchvision's classifiers) or written as the reference implementations write them
(HF-style LLaMA with RoPE and GQA, GPT-2 with a KV cache, BERT with a padding mask, T5 with
relative position buckets, a capacity-routed MoE), plus a layer whose attention is already
ONNX Runtime's com.microsoft MultiHeadAttention.

Usage: export_models.py OUT_DIR   -> OUT_DIR/<name>.onnx and OUT_DIR/models.txt, one line
per model: name, the --bind text to compile it with, its kind (vision|transformer|text:
transformer is a vision transformer, which runs under megatron as text models do), and
optionally Megatron knobs to run it with as well (tp=2: tensor parallelism, which the
search does not pick for models this small).
"""
import math
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision
from torchvision.models.convnext import CNBlockConfig, ConvNeXt
from torchvision.models.regnet import BlockParams, RegNet
from torchvision.models.resnet import BasicBlock, ResNet
from torchvision.models.swin_transformer import SwinTransformer
from torchvision.models.vision_transformer import VisionTransformer

torch.manual_seed(0)


# ---- HF-style LLaMA block: RMSNorm, RoPE, grouped-query attention, SwiGLU ----------------
class RMSNorm(nn.Module):
    def __init__(self, h, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(h))
        self.eps = eps

    def forward(self, x):
        variance = x.pow(2).mean(-1, keepdim=True)
        return self.weight * (x * torch.rsqrt(variance + self.eps))


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


class LlamaBlock(nn.Module):
    def __init__(self, h=64, heads=4, kv_heads=2, inter=128, theta=10000.0):
        super().__init__()
        self.heads, self.kv, self.d = heads, kv_heads, h // heads
        self.input_layernorm = RMSNorm(h)
        self.q_proj = nn.Linear(h, heads * self.d, bias=False)
        self.k_proj = nn.Linear(h, kv_heads * self.d, bias=False)
        self.v_proj = nn.Linear(h, kv_heads * self.d, bias=False)
        self.o_proj = nn.Linear(h, h, bias=False)
        self.post_attention_layernorm = RMSNorm(h)
        self.gate_proj = nn.Linear(h, inter, bias=False)
        self.up_proj = nn.Linear(h, inter, bias=False)
        self.down_proj = nn.Linear(inter, h, bias=False)
        self.register_buffer("inv_freq", 1.0 / (theta ** (torch.arange(0, self.d, 2).float() / self.d)), persistent=False)

    def repeat_kv(self, x):  # HF's repeat_kv: expand then reshape
        b, kv, s, d = x.shape
        rep = self.heads // kv
        return x[:, :, None, :, :].expand(b, kv, rep, s, d).reshape(b, kv * rep, s, d)

    def forward(self, x, position_ids):
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
        k, v = self.repeat_kv(k), self.repeat_kv(v)
        causal = torch.full((s, s), float("-inf")).triu(1)
        scores = q @ k.transpose(2, 3) / math.sqrt(self.d) + causal
        attn = torch.softmax(scores, dim=-1) @ v
        x = x + self.o_proj(attn.transpose(1, 2).reshape(b, s, -1))
        hs = self.post_attention_layernorm(x)
        return x + self.down_proj(F.silu(self.gate_proj(hs)) * self.up_proj(hs))


class TinyLlama(nn.Module):
    def __init__(self, vocab=128, h=64, layers=2):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, h)
        self.layers = nn.ModuleList([LlamaBlock(h) for _ in range(layers)])
        self.norm = RMSNorm(h)
        self.lm_head = nn.Linear(h, vocab, bias=False)

    def forward(self, input_ids, position_ids):
        x = self.embed_tokens(input_ids)
        for layer in self.layers:
            x = layer(x, position_ids)
        return self.lm_head(self.norm(x))


# ---- A vision-language model as LLaVA writes it ---------------------------------------------
class ClipLayer(nn.Module):
    def __init__(self, h=32, heads=2, inter=64):
        super().__init__()
        self.heads, self.d = heads, h // heads
        self.layer_norm1 = nn.LayerNorm(h)
        self.q_proj, self.k_proj, self.v_proj, self.out_proj = (nn.Linear(h, h) for _ in range(4))
        self.layer_norm2 = nn.LayerNorm(h)
        self.fc1, self.fc2 = nn.Linear(h, inter), nn.Linear(inter, h)

    def forward(self, x):
        b, s, _ = x.shape
        hs = self.layer_norm1(x)
        q, k, v = (p(hs).view(b, s, self.heads, self.d).transpose(1, 2) for p in (self.q_proj, self.k_proj, self.v_proj))
        attn = torch.softmax(q @ k.transpose(2, 3) / math.sqrt(self.d), dim=-1) @ v
        x = x + self.out_proj(attn.transpose(1, 2).reshape(b, s, -1))
        return x + self.fc2(F.gelu(self.fc1(self.layer_norm2(x))))


class TinyVisionTower(nn.Module):
    """CLIP's vision model: patches by a strided convolution, a class token expanded to the
    batch, learned positions, pre-norm layers; LLaVA reads the patch features."""

    def __init__(self, h=32, patch=8, image=32, layers=2):
        super().__init__()
        self.patch_embedding = nn.Conv2d(3, h, patch, stride=patch, bias=False)
        self.class_embedding = nn.Parameter(torch.randn(h))
        self.position_embedding = nn.Embedding((image // patch) ** 2 + 1, h)
        self.pre_layrnorm = nn.LayerNorm(h)
        self.layers = nn.ModuleList([ClipLayer(h) for _ in range(layers)])

    def forward(self, pixel_values):
        x = self.patch_embedding(pixel_values).flatten(2).transpose(1, 2)
        x = torch.cat([self.class_embedding.expand(x.shape[0], 1, -1), x], dim=1) + self.position_embedding.weight
        x = self.pre_layrnorm(x)
        for layer in self.layers:
            x = layer(x)
        return x[:, 1:]


class TinyVlm(nn.Module):
    """LLaVA: the tower's patch features through a two-layer projector take the first positions
    of the sequence, the text's embeddings the rest, one decoder over both."""

    def __init__(self, vocab=128, h=64, vision_h=32, layers=2):
        super().__init__()
        self.vision_tower = TinyVisionTower(vision_h)
        self.multi_modal_projector = nn.Sequential(nn.Linear(vision_h, h), nn.GELU(), nn.Linear(h, h))
        self.embed_tokens = nn.Embedding(vocab, h)
        self.layers = nn.ModuleList([LlamaBlock(h) for _ in range(layers)])
        self.norm = RMSNorm(h)
        self.lm_head = nn.Linear(h, vocab, bias=False)

    def forward(self, pixel_values, input_ids):
        x = torch.cat([self.multi_modal_projector(self.vision_tower(pixel_values)), self.embed_tokens(input_ids)], dim=1)
        positions = torch.arange(x.shape[1]).unsqueeze(0).expand(x.shape[0], -1)
        for layer in self.layers:
            x = layer(x, positions)
        return self.lm_head(self.norm(x))


# ---- GPT-2 decoding step with a KV cache -------------------------------------------------
class Gpt2Attention(nn.Module):
    def __init__(self, h, heads):
        super().__init__()
        self.heads = heads
        self.c_attn = nn.Linear(h, 3 * h)
        self.c_proj = nn.Linear(h, h)

    def forward(self, x, past_k, past_v):
        b, s, h = x.shape
        q, k, v = self.c_attn(x).split(h, dim=2)
        shape = (b, s, self.heads, h // self.heads)
        q, k, v = (t.view(shape).transpose(1, 2) for t in (q, k, v))
        k = torch.cat((past_k, k), dim=-2)
        v = torch.cat((past_v, v), dim=-2)
        w = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(h // self.heads), dim=-1)
        y = (w @ v).transpose(1, 2).reshape(b, s, h)
        return self.c_proj(y), k, v


class Gpt2Step(nn.Module):
    def __init__(self, vocab=128, h=64, heads=4, layers=2, positions=64):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, h), nn.Embedding(positions, h)
        self.ln_1 = nn.ModuleList([nn.LayerNorm(h) for _ in range(layers)])
        self.attn = nn.ModuleList([Gpt2Attention(h, heads) for _ in range(layers)])
        self.ln_2 = nn.ModuleList([nn.LayerNorm(h) for _ in range(layers)])
        self.mlp = nn.ModuleList([nn.Sequential(nn.Linear(h, 4 * h), nn.GELU(), nn.Linear(4 * h, h)) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(h)

    def forward(self, input_ids, past_key_0, past_value_0, past_key_1, past_value_1):
        past = [(past_key_0, past_value_0), (past_key_1, past_value_1)]
        start = past_key_0.shape[2]
        pos = torch.arange(start, start + input_ids.shape[1]).unsqueeze(0)
        x = self.wte(input_ids) + self.wpe(pos)
        present = []
        for i, (pk, pv) in enumerate(past):
            a, k, v = self.attn[i](self.ln_1[i](x), pk, pv)
            x = x + a
            x = x + self.mlp[i](self.ln_2[i](x))
            present += [k, v]
        logits = self.ln_f(x) @ self.wte.weight.t()
        return (logits, *present)


# ---- BERT-style encoder with a padding mask ----------------------------------------------
class BertEncoder(nn.Module):
    def __init__(self, vocab=128, h=64, heads=4, layers=2, positions=64):
        super().__init__()
        self.word_embeddings, self.position_embeddings = nn.Embedding(vocab, h), nn.Embedding(positions, h)
        self.LayerNorm = nn.LayerNorm(h)
        self.layers = nn.ModuleList([nn.TransformerEncoderLayer(h, heads, 2 * h, 0.0, batch_first=True)
                                     for _ in range(layers)])
        self.heads = heads
        self.pooler = nn.Linear(h, h)

    def forward(self, input_ids, attention_mask):
        pos = torch.arange(input_ids.shape[1]).unsqueeze(0)
        x = self.LayerNorm(self.word_embeddings(input_ids) + self.position_embeddings(pos))
        # HF's extended mask: (1 - mask) * large negative, broadcast over heads and queries.
        ext = (1.0 - attention_mask[:, None, None, :].float()) * -10000.0
        for layer in self.layers:
            x = self.attend(layer, x, ext)
        return torch.tanh(self.pooler(x[:, 0]))

    def attend(self, layer, x, ext):
        b, s, h = x.shape
        d = h // self.heads
        qkv = F.linear(x, layer.self_attn.in_proj_weight, layer.self_attn.in_proj_bias)
        q, k, v = (t.reshape(b, s, self.heads, d).transpose(1, 2) for t in qkv.split(h, dim=-1))
        w = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(d) + ext, dim=-1)
        y = layer.self_attn.out_proj((w @ v).transpose(1, 2).reshape(b, s, h))
        x = layer.norm1(x + y)
        return layer.norm2(x + layer.linear2(F.relu(layer.linear1(x))))


# ---- T5-style encoder-decoder with relative position buckets -----------------------------
def relative_buckets(q_len, k_len, buckets=8, max_distance=16, bidirectional=True):
    ctx = torch.arange(q_len)[:, None]
    mem = torch.arange(k_len)[None, :]
    rel = mem - ctx
    n = buckets
    ret = torch.zeros_like(rel)
    if bidirectional:
        n //= 2
        ret = ret + (rel > 0).long() * n
        rel = rel.abs()
    else:
        rel = -torch.min(rel, torch.zeros_like(rel))
    exact = n // 2
    small = rel < exact
    large = exact + (torch.log(rel.float() / exact + 1e-6) / math.log(max_distance / exact) * (n - exact)).long()
    large = torch.min(large, torch.full_like(large, n - 1))
    return ret + torch.where(small, rel, large)


class T5Attention(nn.Module):
    def __init__(self, h, heads, relative=False, bidirectional=True):
        super().__init__()
        self.heads, self.d = heads, h // heads
        self.q, self.k, self.v, self.o = (nn.Linear(h, h, bias=False) for _ in range(4))
        self.bidirectional = bidirectional
        self.relative_attention_bias = nn.Embedding(8, heads) if relative else None

    def forward(self, x, kv, bias=None):
        b, s, h = x.shape
        t = kv.shape[1]
        q = self.q(x).view(b, s, self.heads, self.d).transpose(1, 2)
        k = self.k(kv).view(b, t, self.heads, self.d).transpose(1, 2)
        v = self.v(kv).view(b, t, self.heads, self.d).transpose(1, 2)
        scores = q @ k.transpose(3, 2)
        if self.relative_attention_bias is not None:
            bias = self.relative_attention_bias(relative_buckets(s, t, bidirectional=self.bidirectional))
            bias = bias.permute(2, 0, 1).unsqueeze(0)
        if bias is not None:
            scores = scores + bias
        y = torch.softmax(scores, dim=-1) @ v
        return self.o(y.transpose(1, 2).reshape(b, s, h)), bias


class TinyT5(nn.Module):
    def __init__(self, vocab=128, h=64, heads=4):
        super().__init__()
        self.shared = nn.Embedding(vocab, h)
        self.enc_attn = T5Attention(h, heads, relative=True)
        self.enc_ff = nn.Sequential(nn.Linear(h, 2 * h, bias=False), nn.ReLU(), nn.Linear(2 * h, h, bias=False))
        self.dec_self = T5Attention(h, heads, relative=True, bidirectional=False)
        self.dec_cross = T5Attention(h, heads)
        self.dec_ff = nn.Sequential(nn.Linear(h, 2 * h, bias=False), nn.ReLU(), nn.Linear(2 * h, h, bias=False))
        self.norms = nn.ModuleList([RMSNorm(h) for _ in range(6)])
        self.lm_head = nn.Linear(h, vocab, bias=False)

    def forward(self, input_ids, decoder_input_ids):
        n = self.norms
        x = self.shared(input_ids)
        x = x + self.enc_attn(n[0](x), n[0](x))[0]
        enc = n[1](x + self.enc_ff(x))
        y = self.shared(decoder_input_ids)
        y = y + self.dec_self(n[2](y), n[2](y))[0]
        y = y + self.dec_cross(n[3](y), enc)[0]
        y = y + self.dec_ff(n[4](y))
        return self.lm_head(n[5](y))


# ---- capacity-routed mixture of experts (GShard/Switch: one-hot dispatch and combine) ----
class CapacityMoE(nn.Module):
    def __init__(self, vocab=128, h=32, experts=4, top_k=2, capacity_factor=1.0, seq=16):
        super().__init__()
        self.embed = nn.Embedding(vocab, h)
        self.norm = nn.LayerNorm(h)
        self.gate = nn.Linear(h, experts, bias=False)
        self.w1 = nn.Parameter(torch.randn(experts, h, 2 * h) * 0.1)
        self.w2 = nn.Parameter(torch.randn(experts, 2 * h, h) * 0.1)
        self.e, self.k = experts, top_k
        self.capacity = int(math.ceil(capacity_factor * top_k * seq / experts))
        self.head = nn.Linear(h, vocab, bias=False)

    def forward(self, input_ids):
        x = self.embed(input_ids)
        hs = self.norm(x)
        probs = torch.softmax(self.gate(hs), dim=-1)                          # [b, s, E]
        weights, index = probs.topk(self.k, dim=-1)                           # [b, s, k]
        mask = F.one_hot(index, self.e).float()                               # [b, s, k, E]
        # Position of each token in its expert's buffer, in sequence order, choice by choice.
        flat = mask.permute(0, 2, 1, 3).reshape(mask.shape[0], -1, self.e)    # [b, k*s, E]
        position = (torch.cumsum(flat, dim=1) - 1) * flat
        position = position.reshape(mask.shape[0], self.k, -1, self.e).permute(0, 2, 1, 3)
        keep = mask * (position < self.capacity).float()
        slot = F.one_hot(position.long().clamp(max=self.capacity - 1), self.capacity).float()  # [b,s,k,E,C]
        dispatch = (keep.unsqueeze(-1) * slot).sum(2)                          # [b, s, E, C]
        combine = ((keep * weights.unsqueeze(-1)).unsqueeze(-1) * slot).sum(2)
        tokens = torch.einsum("bsec,bsh->bech", dispatch, hs)
        out = torch.einsum("beci,eih->bech", F.gelu(torch.einsum("bech,ehi->beci", tokens, self.w1)), self.w2)
        x = x + torch.einsum("bsec,bech->bsh", combine, out)
        return self.head(x)


# ---- seq-major PyTorch attention (batch_first=False, nn.MultiheadAttention's default) -----
class SeqMajorEncoder(nn.Module):
    """nn.TransformerEncoder over [seq, batch, h]: nn.MultiheadAttention reshapes q, k, v to
    [seq, batch*heads, d] and attends on the merged batch*heads dim."""

    def __init__(self, vocab=128, h=32, heads=4, layers=2):
        super().__init__()
        self.embed = nn.Embedding(vocab, h)
        layer = nn.TransformerEncoderLayer(h, heads, 2 * h, 0.0)  # batch_first=False
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Linear(h, vocab)

    def forward(self, input_ids):  # [seq, batch]
        return self.head(self.encoder(self.embed(input_ids)))


# ---- stride-2 CNN on odd image sizes: floor (and ceil_mode) output sizes ---------------------
class OddStrideCnn(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 8, 3, stride=2, padding=1), nn.ReLU(),        # 33 -> 17
            nn.MaxPool2d(2, stride=2, ceil_mode=True),                 # 17 -> 9 (ceil)
            nn.Conv2d(8, 16, 3, stride=2), nn.ReLU(),                  # 9 -> 4
            nn.AvgPool2d(3, stride=2, ceil_mode=True))                 # 4 -> 2 (ceil)
        self.fc = nn.Linear(16, classes)

    def forward(self, image):
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(self.features(image), 1), 1))


def write_ort_attention(out):
    """A transformer layer whose attention is already ONNX Runtime's fused
    com.microsoft MultiHeadAttention, as its transformer optimizer writes models."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    h, heads = 32, 4
    rng = np.random.default_rng(0)
    weights = []

    def w(name, dims):
        weights.append(numpy_helper.from_array(rng.uniform(-0.3, 0.3, dims).astype(np.float32), name))
        return name

    def ln(x, name):
        return helper.make_node("LayerNormalization", [x, w(name + ".weight", [h]), w(name + ".bias", [h])],
                                [name + "_out"], name=name, axis=-1)

    nodes = [ln("x", "ln1")]
    for p in "qkv":
        nodes.append(helper.make_node("MatMul", ["ln1_out", w(p + "_proj.weight", [h, h])], [p], name=p + "_proj"))
    nodes.append(helper.make_node("MultiHeadAttention", ["q", "k", "v"], ["ctx"], name="attn", domain="com.microsoft",
                                  num_heads=heads))
    nodes += [helper.make_node("MatMul", ["ctx", w("o_proj.weight", [h, h])], ["o"], name="o_proj"),
              helper.make_node("Add", ["x", "o"], ["res"], name="residual"), ln("res", "ln2"),
              helper.make_node("MatMul", ["ln2_out", w("fc1.weight", [h, 2 * h])], ["f1"], name="fc1"),
              helper.make_node("Relu", ["f1"], ["a"], name="act"),
              helper.make_node("MatMul", ["a", w("fc2.weight", [2 * h, h])], ["f2"], name="fc2"),
              helper.make_node("Add", ["res", "f2"], ["y"], name="residual2")]
    graph = helper.make_graph(nodes, "ort_mha", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "seq", h])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "seq", h])], weights)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)],
                              ir_version=8)
    onnx.save(model, os.path.join(out, "ort_mha.onnx"))
    return "ort_mha batch=12,seq=8 text\n"


def randomize(model):
    # Distinct values everywhere: the exporter merges equal initializers.
    with torch.no_grad():
        for p in model.parameters():
            p.uniform_(-0.1, 0.1)
    return model.eval()


def export(out, name, model, args, input_names, output_names, dynamic_axes, bind, kind, knobs=""):
    path = os.path.join(out, name + ".onnx")
    # Not under no_grad: eval-mode nn.MultiheadAttention would take its fused fast path,
    # which the exporter cannot write.
    torch.onnx.export(randomize(model), args, path, opset_version=17, input_names=input_names,
                      output_names=output_names, dynamic_axes=dynamic_axes)
    return f"{name} {bind} {kind} {knobs}".rstrip() + "\n"


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    lines = []
    image = torch.randn(2, 3, 32, 32)
    vision = {"image": {0: "batch"}}  # inputs only, as the tutorials write it
    models = [
        ("resnet", ResNet(BasicBlock, [1, 1, 1, 1], num_classes=10)),
        ("mobilenet_v3_small", torchvision.models.mobilenet_v3_small(num_classes=10, width_mult=0.25)),
        ("regnet", RegNet(BlockParams.from_init_params(depth=4, w_0=8, w_a=8.0, w_m=2.0, group_width=8), num_classes=10)),
        ("convnext", ConvNeXt([CNBlockConfig(16, 32, 1), CNBlockConfig(32, None, 1)], num_classes=10)),
        ("swin", SwinTransformer([2, 2], 16, [2, 2], [2, 4], [4, 4], num_classes=10)),
    ]
    for name, model in models:
        lines.append(export(out, name, model, image, ["image"], ["logits"], vision, "batch=12", "vision"))
    # 16 patches and a class token: 17 tokens, which no tensor-parallel degree divides.
    lines.append(export(out, "vit", VisionTransformer(32, 8, num_layers=2, num_heads=2, hidden_dim=32, mlp_dim=64,
                                                      num_classes=10), image, ["image"], ["logits"], vision,
                        "batch=12", "transformer", "tp=2"))
    # H and W dynamic too, as third-party exporters write vision models; bound odd.
    lines.append(export(out, "odd_stride_cnn", OddStrideCnn(), torch.randn(2, 3, 33, 33), ["image"], ["logits"],
                        {"image": {0: "batch", 2: "height", 3: "width"}}, "batch=12,height=33,width=33", "vision"))
    # Fully static, as `torch.onnx.export(model, x, f)` writes it: the batch is the example's.
    lines.append(export(out, "efficientnet_b0_static", torchvision.models.efficientnet_b0(num_classes=10),
                        torch.randn(12, 3, 32, 32), ["image"], ["logits"], None, "-", "vision"))
    # The batch dim under another name (paddle2onnx's style).
    lines.append(export(out, "squeezenet_named", torchvision.models.squeezenet1_1(num_classes=10), image, ["image"],
                        ["logits"], {"image": {0: "p2o.DynamicDimension.0"}}, "p2o.DynamicDimension.0=12", "vision"))
    ids = torch.randint(0, 128, (2, 16))
    lines.append(export(out, "llama_gqa", TinyLlama(), (ids, torch.arange(16).unsqueeze(0).repeat(2, 1)),
                        ["input_ids", "position_ids"], ["logits"],
                        {"input_ids": {0: "batch", 1: "seq"}, "position_ids": {0: "batch", 1: "seq"}},
                        "batch=12,seq=8", "text"))
    past = [torch.randn(2, 4, 8, 16) for _ in range(4)]
    past_names = ["past_key_0", "past_value_0", "past_key_1", "past_value_1"]
    axes = {"input_ids": {0: "batch", 1: "seq"}}
    axes.update({n: {0: "batch", 2: "past_seq"} for n in past_names})
    lines.append(export(out, "gpt2_kv_cache", Gpt2Step(), (ids[:, :1], *past), ["input_ids", *past_names],
                        ["logits", "present_key_0", "present_value_0", "present_key_1", "present_value_1"], axes,
                        "batch=12,seq=1,past_seq=8", "text"))
    mask = torch.ones(2, 16, dtype=torch.int64)
    lines.append(export(out, "bert_padding_mask", BertEncoder(), (ids, mask), ["input_ids", "attention_mask"],
                        ["pooled"], {"input_ids": {0: "batch", 1: "seq"}, "attention_mask": {0: "batch", 1: "seq"}},
                        "batch=12,seq=8", "text", "tp=2"))
    lines.append(export(out, "t5_relative", TinyT5(), (ids, ids[:, :8]), ["input_ids", "decoder_input_ids"], ["logits"],
                        {"input_ids": {0: "batch", 1: "seq"}, "decoder_input_ids": {0: "batch", 1: "target"}},
                        "batch=12,seq=8,target=4", "text"))
    lines.append(export(out, "moe_capacity", CapacityMoE(), ids, ["input_ids"], ["logits"], {"input_ids": {0: "batch"}},
                        "batch=12", "text"))
    lines.append(export(out, "seq_major_encoder", SeqMajorEncoder(), ids.t().contiguous(), ["input_ids"], ["logits"],
                        {"input_ids": {0: "seq", 1: "batch"}}, "seq=8,batch=12", "text", "tp=2"))
    # 16 image positions then the text's; the tower's scopes are where MIMO's split cuts.
    lines.append(export(out, "tiny_vlm", TinyVlm(), (image, ids), ["pixel_values", "input_ids"], ["logits"],
                        {"pixel_values": {0: "batch"}, "input_ids": {0: "batch", 1: "seq"}}, "batch=12,seq=8", "text"))
    lines.append(write_ort_attention(out))
    with open(os.path.join(out, "models.txt"), "w") as f:
        f.writelines(lines)


if __name__ == "__main__":
    main()
