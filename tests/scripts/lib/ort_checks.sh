# Shared by the scripted ONNX Runtime checks (sourced; not a test of its own).
# Expects $symtensor and $root; sets $work (a temporary folder removed on exit) and defines
# fail and model_file.
if [ ! -d "$root/scripts/ort/node_modules/onnxruntime-node" ]; then
  echo "onnxruntime-node is not installed: run scripts/install_deps.sh" >&2
  exit 1
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# model_file NAME: a zoo preset written once into $work (NAME+none: weight-free, parameters
# as graph inputs; NAME+mtp: with one multi-token prediction layer), or torch:NAME, a
# committed export.
model_file() {
  case "$1" in
    torch:*) echo "$root/tests/data/torch/${1#torch:}.onnx" ;;
    *+none) [ -f "$work/$1.onnx" ] || "$symtensor" models "${1%+none}" --weights none -o "$work/$1.onnx" >/dev/null
            echo "$work/$1.onnx" ;;
    *+mtp) [ -f "$work/$1.onnx" ] || "$symtensor" models "${1%+mtp}" --mtp 1 -o "$work/$1.onnx" >/dev/null
           echo "$work/$1.onnx" ;;
    *) [ -f "$work/$1.onnx" ] || "$symtensor" models "$1" -o "$work/$1.onnx" >/dev/null; echo "$work/$1.onnx" ;;
  esac
}
