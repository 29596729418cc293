#!/usr/bin/env bash
# The main job on the bundled defaults: install, build, then compare SymTensor's plan with
# Megatron-LM's best configuration, data parallelism and ZeRO-3 for LLaMA-2 7B (weight-free)
# on four nodes of eight L4 GPUs (scripts/default_demo.sh); the report lands in
# out/compare/report.html.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bash "$root/scripts/install_deps.sh"
bash "$root/scripts/build.sh" "$root/build"
bash "$root/scripts/default_demo.sh" "$root/build/symtensor" "$root/out"
