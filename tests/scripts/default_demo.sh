#!/usr/bin/env bash
# The default demo (scripts/default_demo.sh, what run_default.sh and README's first set-up
# command run) shows a choice: the chosen plan is SymTensor's, faster than the next strategy
# that fits, and report.md / report.html say why in the chosen plan's section, with the numbers
# of the results table.
# Usage: bash default_demo.sh SYMTENSOR_BINARY SOURCE_ROOT
set -euo pipefail
symtensor="$1"
root="$2"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
grep -q 'scripts/default_demo.sh' "$root/scripts/run_default.sh" || fail "run_default.sh does not run the demo"
bash "$root/scripts/default_demo.sh" "$symtensor" "$work" >/dev/null 2>"$work/err" || { cat "$work/err" >&2; fail "demo failed"; }
md="$work/compare/report.md"
[ -f "$md" ] || fail "no report.md"
grep -q '^\*\*Chosen: symtensor ' "$md" || fail "the chosen plan is not SymTensor's: $(grep Chosen "$md")"
# step times of the results table, seconds
cell() { awk -F'|' -v s="$1" '$2 ~ "^ "s" " {print $3; exit}' "$md" | sed 's/^ *//; s/ *$//'; }
step() { cell "$1" | sed 's/ //g'; }
to_s() { case "$1" in *ms) echo "${1%ms}" | awk '{print $1/1000}';; *s) echo "${1%s}";; esac; }
ts="$(to_s "$(step symtensor)")"; tm="$(to_s "$(step megatron)")"
[ -n "$ts" ] && [ -n "$tm" ] || fail "step times not found ($ts, $tm)"
awk -v a="$ts" -v b="$tm" 'BEGIN {exit !(a < b)}' || fail "symtensor ($ts s) is not faster than megatron ($tm s)"
# megatron is the next plan that fits (dp and zero3 do not)
grep -qE '^\| (dp|zero3) .*\| no \|' "$md" || fail "dp or zero3 fits: the next plan is not megatron"
why="$(grep '^Why symtensor: ' "$md")" || fail "no 'Why symtensor' line"
ratio="$(awk -v a="$ts" -v b="$tm" 'BEGIN {printf "%.2f", b / a}')"
[ "$why" = "Why symtensor: $(cell symtensor) a step against $(cell megatron) for megatron, the next fastest plan that fits: ${ratio}x faster." ] \
  || fail "why line: $why (ratio by hand ${ratio})"
# Megatron-best is an interleaved pipeline that recomputes nothing; SymTensor shards fully and
# recomputes some of the layers.
grep -Eq '^What symtensor does differently: .*it recomputes [0-9]+ of 32 layers where megatron recomputes nothing; .*peak ' "$md" \
  || fail "no recomputation difference: $(grep '^What symtensor' "$md")"
grep -Eq '^zero3 would take .* a step but needs .* per device of .*: it does not fit\.$' "$md" || fail "no line on zero3"
# The why line sits in the chosen plan's section of report.md, and in "The chosen plan explained" of report.html.
[ -n "$(awk '/^## / {section = $0; next} section == "## The chosen plan" && /^Why symtensor: /' "$md")" ] \
  || fail "the why line is not in report.md's chosen plan section"
html="$(dirname "$md")/report.html"
explained="$(sed -n '/<h2>The chosen plan explained<\/h2>/,/<h2>Step time as a formula/p' "$html")"
grep -q "<p class=\"why\">Why symtensor: " <<<"$explained" || fail "report.html lacks the why paragraph in 'The chosen plan explained'"
# The memory chart: dp (149 GiB) past twice the 21.37 GiB capacity (the usable memory the table shows) is clipped, and only dp and zero3 say they do not fit.
chart="$(sed -n '/<h2>Memory per pipeline stage<\/h2>/,/<h2>Simulated step/p' "$html")"
grep -q 'stage-memory clipped' <<<"$chart" || fail "the memory chart is not clipped near the capacity"
[ "$(grep -o 'does not fit: ' <<<"$chart" | wc -l)" = 2 ] || fail "the memory chart does not mark dp and zero3 alone: $(grep -o 'does not fit: [^<]*' <<<"$chart")"
# ... and its capacity line is the table's (the chosen row's "peak of capacity" cell), not the GPU's whole memory.
table_capacity="$(awk -F'|' '$2 ~ "^ symtensor " {print $8; exit}' "$md" | sed 's/.* of //; s/ *$//')"
grep -q "capacity $table_capacity<" <<<"$chart" || fail "the memory chart's capacity is not the table's $table_capacity: $(grep -o 'capacity [^<]*' <<<"$chart")"
