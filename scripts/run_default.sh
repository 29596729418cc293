#!/usr/bin/env bash
# The main job on the bundled defaults: install, build, then run SymTensor.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bash "$root/scripts/install_deps.sh"
bash "$root/scripts/build.sh" "$root/build"
"$root/build/symtensor" inspect "$root/onnx_models/bundled/gpt-1.7b.onnx" --bind batch=8,seq=2048
