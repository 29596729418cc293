#!/usr/bin/env bash
# Installs what a fresh Debian 12 machine lacks: the toolchain and libraries (Debian
# packages) and ONNX Runtime for the numerical checks (npm, CPU build inside the tarball).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
packages=(g++ cmake ninja-build pkg-config libonnx-dev libprotobuf-dev protobuf-compiler
  libboost-graph-dev libginac-dev libyaml-cpp-dev libbenchmark-dev libgtest-dev libgmock-dev
  libcli11-dev nlohmann-json3-dev libfmt-dev coinor-libcbc-dev libjemalloc-dev
  python3-onnx python3-numpy python3-torch python3-torchvision time  # exporters and external-data tests
  chromium clang libclang-rt-14-dev)  # report browser test; libFuzzer targets
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Node.js and npm may come from elsewhere than Debian (as on CI's image): only take
# Debian's when there is none.
command -v node >/dev/null && command -v npm >/dev/null || missing+=(nodejs npm)
if ((${#missing[@]})); then
  sudo_cmd=""; [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# ONNX Runtime (Node binding). Its install script would fetch GPU providers from the
# network; the CPU runtime ships in the tarball, so the script is skipped.
if [ ! -d "$here/ort/node_modules/onnxruntime-node" ]; then
  (cd "$here/ort" && ONNXRUNTIME_NODE_INSTALL=skip npm install --ignore-scripts --no-audit --no-fund --silent >/dev/null)
fi
