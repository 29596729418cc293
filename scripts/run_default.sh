#!/usr/bin/env bash
# The main job on the bundled defaults: install, build, then compare SymTensor's plan with
# Megatron-LM's best configuration, data parallelism and ZeRO-3 for the bundled GPT-1.7B
# (weight-free) on two DGX A100 nodes; the report lands in out/compare/report.html.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bash "$root/scripts/install_deps.sh"
bash "$root/scripts/build.sh" "$root/build"
"$root/build/symtensor" compare "$root/onnx_models/bundled/gpt-1.7b.onnx" --cluster dgx-a100 --nodes 2 \
  --bind batch=128,seq=2048 -o "$root/out/compare"
