#!/usr/bin/env bash
# report.html renders in a real browser: headless Chromium opens the compare and sweep
# reports from files (no network), the screenshots are not blank, and the DOM holds the
# expected SVG charts.
# Usage: bash report_browser.sh SYMTENSOR_BINARY SOURCE_ROOT
# Skips (exit 0) only when Chromium is absent and CI is not "true"; in CI it fails.
set -euo pipefail
symtensor="$1"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

browser="$(command -v chromium || command -v chromium-browser || true)"
if [ -z "$browser" ]; then
  if [ "${CI:-}" = "true" ]; then fail "chromium is not installed (apt-get install -y chromium)"; fi
  echo "SKIP: chromium is not installed (apt-get install -y chromium); report_browser not run"
  exit 0
fi
python=/usr/bin/python3
[ -x "$python" ] || python=python3

chrome() {  # chrome ARGS... : headless, offline, throwaway profile
  timeout 120 "$browser" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --user-data-dir="$(mktemp -d -p "$work")" "$@" 2>/dev/null
}

# A 4-layer GPT-1.7B (weight-free) on two DGX A100 nodes: pipelining is possible.
"$symtensor" models gpt-1.7b --layers 4 -o "$work/gpt.onnx" >/dev/null
"$symtensor" compare "$work/gpt.onnx" --cluster dgx-a100 --nodes 2 --bind batch=32,seq=512 \
  -o "$work/compare" >"$work/compare.log" || fail "compare: $(cat "$work/compare.log")"
"$symtensor" sweep "$work/gpt.onnx" --clusters dgx-a100,dgx-h100 --gpus 8..32 --bind batch=64,seq=512 \
  -o "$work/sweep" >"$work/sweep.log" 2>&1 || fail "sweep: $(cat "$work/sweep.log")"

# A PNG's pixels: distinct colours and the share of non-white pixels (pure Python, zlib).
png_stats() {
  "$python" - "$1" <<'PY'
import struct, sys, zlib
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
pos, idat, w = 8, b"", 0
while pos < len(data):
    n, kind = struct.unpack(">I4s", data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + n]
    if kind == b"IHDR":
        w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
        assert depth == 8 and ctype in (2, 6), "unexpected PNG format"
        bpp = 3 if ctype == 2 else 4
    elif kind == b"IDAT":
        idat += body
    pos += 12 + n
raw, stride = zlib.decompress(idat), w * bpp
prev, colors, ink, i = bytearray(stride), set(), 0, 0
for _ in range(h):
    f, line = raw[i], bytearray(raw[i + 1:i + 1 + stride]); i += 1 + stride
    for x in range(stride):
        a = line[x - bpp] if x >= bpp else 0
        b, c = prev[x], prev[x - bpp] if x >= bpp else 0
        if f == 1: line[x] = (line[x] + a) & 255
        elif f == 2: line[x] = (line[x] + b) & 255
        elif f == 3: line[x] = (line[x] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c; pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    for x in range(0, stride, bpp * 2):  # every other pixel is enough
        px = bytes(line[x:x + 3]); colors.add(px)
        if px != b"\xff\xff\xff": ink += 1
    prev = line
print(len(colors), round(ink / (h * w / 2), 4))
PY
}

check_report() {  # check_report DIR NAME SVG_CLASSES...
  local dir="$1" name="$2"; shift 2
  local html="$dir/report.html"
  [ -s "$html" ] || fail "$name: no report.html"
  chrome --dump-dom "file://$html" >"$work/$name.dom" || fail "$name: chromium --dump-dom failed"
  for cls in "$@"; do
    grep -q "<svg[^>]*class=\"chart $cls\"" "$work/$name.dom" || fail "$name: the DOM has no <svg class=\"chart $cls\">"
  done
  local marks
  marks="$(grep -oE '<(rect|path|polyline|circle|line)[ />]' "$work/$name.dom" | wc -l)"
  [ "$marks" -ge 5 ] || fail "$name: the DOM has only $marks SVG marks (rect, path, polyline, circle, line)"
  chrome --hide-scrollbars --window-size=1200,2600 --screenshot="$work/$name.png" "file://$html" >/dev/null \
    || fail "$name: chromium --screenshot failed"
  [ -s "$work/$name.png" ] || fail "$name: no screenshot"
  read -r colors ink < <(png_stats "$work/$name.png")
  echo "$name: $colors colours, $ink of the page inked"
  [ "$colors" -ge 12 ] || fail "$name: the screenshot has only $colors colours (blank?)"
  "$python" -c "import sys; sys.exit(0 if float(sys.argv[1]) > 0.02 else 1)" "$ink" \
    || fail "$name: the screenshot is almost blank ($ink inked)"
  if [ -n "${REPORT_SCREENSHOT_DIR:-}" ]; then cp "$work/$name.png" "$REPORT_SCREENSHOT_DIR/"; fi
}

check_report "$work/compare" compare breakdown memory gantt
check_report "$work/sweep" sweep scaling cost
echo "report_browser: OK"
