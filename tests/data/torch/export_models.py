#!/usr/bin/python3
"""Exports small PyTorch modules to ONNX with Debian's torch (1.13), as a user would.

Writes tests/data/torch/*.onnx and expected.json, which holds each model's parameter
count as torch counts it (sum of numel over model.parameters(), tied weights once).
Run with /usr/bin/python3 (Debian's python3-torch); outputs are committed.
"""
import json
import math
import os

import torch
import torch.nn as nn
import torchvision

HERE = os.path.dirname(os.path.abspath(__file__))
torch.manual_seed(0)


class Block(nn.Module):
    """A GPT block written by hand: pre-LN attention and GELU MLP."""

    def __init__(self, h, heads):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(h)
        self.qkv = nn.Linear(h, 3 * h)
        self.proj = nn.Linear(h, h)
        self.ln2 = nn.LayerNorm(h)
        self.fc1 = nn.Linear(h, 4 * h)
        self.fc2 = nn.Linear(4 * h, h)

    def forward(self, x):
        b, s, h = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(h, dim=2)
        shape = (b, s, self.heads, h // self.heads)
        q = q.reshape(shape).transpose(1, 2)
        k = k.reshape(shape).transpose(1, 2)
        v = v.reshape(shape).transpose(1, 2)
        att = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(h // self.heads), dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, s, h)
        x = x + self.proj(y)
        return x + self.fc2(nn.functional.gelu(self.fc1(self.ln2(x))))


class TinyGPT(nn.Module):
    def __init__(self, vocab=256, h=64, heads=4, layers=2, max_seq=128):
        super().__init__()
        self.wte = nn.Embedding(vocab, h)
        self.wpe = nn.Embedding(max_seq, h)
        self.blocks = nn.ModuleList([Block(h, heads) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(h)
        self.head = nn.Linear(h, vocab, bias=False)
        self.head.weight = self.wte.weight  # tied

    def forward(self, ids):
        pos = torch.arange(ids.shape[1], device=ids.device).unsqueeze(0)
        x = self.wte(ids) + self.wpe(pos)
        for blk in self.blocks:
            x = blk(x)
        return self.head(self.ln_f(x))


class Encoder(nn.Module):
    """nn.TransformerEncoder, the stock PyTorch layer."""

    def __init__(self, h=64, heads=4, layers=2):
        super().__init__()
        layer = nn.TransformerEncoderLayer(h, heads, dim_feedforward=128, batch_first=True, dropout=0.0)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)

    def forward(self, x):
        return self.encoder(x)


class TinyResNet(nn.Module):
    """Two torchvision BasicBlocks behind a ResNet stem, with BatchNorm kept."""

    def __init__(self, width=16, classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, width, 7, 2, 3, bias=False), nn.BatchNorm2d(width), nn.ReLU(),
                                  nn.MaxPool2d(3, 2, 1))
        down = nn.Sequential(nn.Conv2d(width, 2 * width, 1, 2, bias=False), nn.BatchNorm2d(2 * width))
        self.layer1 = torchvision.models.resnet.BasicBlock(width, width)
        self.layer2 = torchvision.models.resnet.BasicBlock(width, 2 * width, stride=2, downsample=down)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(2 * width, classes)

    def forward(self, x):
        x = self.layer2(self.layer1(self.stem(x)))
        return self.fc(torch.flatten(self.pool(x), 1))


def export(model, args, name, input_names, dynamic_axes, training=torch.onnx.TrainingMode.EVAL, fold=True):
    # Distinct random values everywhere: the exporter merges initializers that are equal
    # (fresh LayerNorms, deep-copied layers), which would hide parameters from the count.
    with torch.no_grad():
        for p in model.parameters():
            p.uniform_(-0.1, 0.1)
    model.eval()
    path = os.path.join(HERE, name + ".onnx")
    torch.onnx.export(model, args, path, opset_version=17, input_names=input_names, output_names=["output"],
                      dynamic_axes=dynamic_axes, training=training, do_constant_folding=fold)
    return {"parameters": sum(p.numel() for p in model.parameters())}


def main():
    expected = {}
    # Without constant folding the tied LM head stays Transpose(wte.weight) instead of a
    # folded copy that no reader of the file could tell from a second parameter.
    expected["gpt_tiny"] = export(TinyGPT(), torch.randint(0, 256, (2, 16)), "gpt_tiny", ["input_ids"],
                                  {"input_ids": {0: "batch", 1: "seq"}, "output": {0: "batch", 1: "seq"}},
                                  fold=False)
    expected["encoder"] = export(Encoder(), torch.randn(2, 16, 64), "encoder", ["x"],
                                 {"x": {0: "batch", 1: "seq"}, "output": {0: "batch", 1: "seq"}})
    # PRESERVE keeps BatchNormalization instead of folding it into the convolutions,
    # so the file holds the module's own parameters.
    expected["resnet_tiny"] = export(TinyResNet(), torch.randn(2, 3, 64, 64), "resnet_tiny", ["image"],
                                     {"image": {0: "batch"}, "output": {0: "batch"}},
                                     training=torch.onnx.TrainingMode.PRESERVE)
    expected["squeezenet"] = export(torchvision.models.squeezenet1_1(num_classes=10), torch.randn(1, 3, 64, 64),
                                    "squeezenet", ["image"], {"image": {0: "batch"}, "output": {0: "batch"}})
    with open(os.path.join(HERE, "expected.json"), "w") as f:
        json.dump(expected, f, indent=2, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
