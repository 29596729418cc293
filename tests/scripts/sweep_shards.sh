#!/usr/bin/env bash
# `sweep --shard K/N` computes every N-th point; `merge` joins the shards into the report the
# whole sweep writes (same points, same numbers); bad shards and missing ones are refused.
# Usage: bash sweep_shards.sh SYMTENSOR_BINARY SOURCE_ROOT
set -euo pipefail
symtensor="$1"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
"$symtensor" models llama2-70b-tiny -o "$work/m.onnx" >/dev/null
args=("$work/m.onnx" --clusters dgx-a100,dgx-h100 --gpus 8,16,32 --bind batch=64,seq=32 --jobs 1)
"$symtensor" sweep "${args[@]}" -o "$work/whole" >/dev/null 2>&1
for k in 1 2 3; do "$symtensor" sweep "${args[@]}" --shard $k/3 -o "$work/s$k" >/dev/null 2>&1; done
/usr/bin/python3 - "$work" <<'PY' || fail "shards"
import json, sys
w = sys.argv[1]
shards = [json.load(open(f"{w}/s{k}/results.json")) for k in (1, 2, 3)]
counts = [len(s["points"]) for s in shards]
assert counts == [2, 2, 2], counts
assert shards[1]["shard"] == {"index": 2, "count": 3}, shards[1]["shard"]
# shard 1 holds points 0 and 3 of (a100: 8,16,32; h100: 8,16,32)
assert [(p["cluster"], p["gpus"]) for p in shards[0]["points"]] == [("dgx-a100", 8), ("dgx-h100", 8)], shards[0]["points"]
PY
out="$("$symtensor" merge "$work/s3" "$work/s1" "$work/s2" -o "$work/merged")" || fail "merge summary"
grep -q "merged 3 shards, 6 points" <<<"$out" || fail "merge summary"
/usr/bin/python3 - "$work" <<'PY' || fail "merged report differs from the whole sweep"
import json, sys
w = sys.argv[1]
a, b = json.load(open(f"{w}/whole/results.json")), json.load(open(f"{w}/merged/results.json"))
strip = lambda j: [{k: v for k, v in p.items()} for p in j["points"]]
assert strip(a) == strip(b), (strip(a), strip(b))
assert b["shard"] == {"index": 1, "count": 1}
# Each point carries its plan's memory per stage; the parts sum to the stage's peak and the
# fullest stage is the point's peak.
for p in b["points"]:
    stages = p["memory_breakdown"]
    assert stages, p
    for m in stages:
        parts = m["parameters_bytes"] + m["gradients_bytes"] + m["optimizer_bytes"] + m["activations_bytes"] + \
            m["transient_bytes"] + m["reserve_bytes"]
        assert abs(parts - m["peak_bytes"]) <= 1e-9 * m["peak_bytes"], m
    assert max(m["peak_bytes"] for m in stages) == p["peak_memory_bytes"], p
PY
for f in report.html report.md results.csv results.json; do [ -s "$work/merged/$f" ] || fail "merge: no $f"; done
expect_error() {  # expect_error PATTERN ARGS...
  local pattern="$1"; shift
  local err
  if err="$("$symtensor" "$@" 2>&1)"; then fail "expected failure: $*"; fi
  grep -q -- "$pattern" <<<"$err" || fail "'$*' said: $err"
  [ "$(echo "$err" | wc -l)" -eq 1 ] || fail "not one line: $err"
}
expect_error "shard 2/3 is missing" merge "$work/s1" "$work/s3" -o "$work/bad1"
[ ! -e "$work/bad1" ] || fail "merge wrote output on error"
expect_error "given twice" merge "$work/s1" "$work/s1" "$work/s2" -o "$work/bad2"
expect_error "the shard count differs" merge "$work/s1" "$work/whole" -o "$work/bad3"
expect_error "cannot be read" merge "$work/nothing" -o "$work/bad4"
expect_error "--shard: K/N needs 1 <= K <= N" sweep "${args[@]}" --shard 4/3 -o "$work/bad5"
expect_error "--shard: expected K/N" sweep "${args[@]}" --shard 2 -o "$work/bad6"
echo "sweep_shards: ok"
