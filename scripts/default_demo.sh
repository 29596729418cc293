#!/usr/bin/env bash
# The default demo (run_default.sh runs it after building): LLaMA-2 7B (weight-free, written by
# `symtensor models`) trained on four nodes of eight L4 GPUs (24 GB each, PCIe, 100 GbE between
# nodes), batch 64 x 4096 tokens. Memory is tight there: data parallelism and ZeRO-3 do not fit,
# Megatron-LM's best configuration recomputes every layer, SymTensor only as many as the memory
# needs, and the report says so in its "plan explained" section. About ten seconds.
# Usage: bash scripts/default_demo.sh SYMTENSOR_BINARY OUT_DIR
set -euo pipefail
symtensor="$1"
out="$2"
mkdir -p "$out"
"$symtensor" models llama2-7b -o "$out/llama2-7b.onnx" >/dev/null
"$symtensor" compare "$out/llama2-7b.onnx" --cluster pcie-l4 --nodes 4 --bind batch=64,seq=4096 -o "$out/compare"
