#!/usr/bin/env bash
# The house rules of compiler/README.md: no include in compiler/ runs from a lower folder of
# the ladder to a higher one, no function declared in a lower folder is defined only in a higher
# one, and no source file passes 800 lines (house_rules.py says how). First the checker itself
# on a made-up tree that breaks each rule, then on this tree.
# Usage: bash house_rules.sh SYMTENSOR_BINARY SOURCE_ROOT
set -euo pipefail
root="$2"
here="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

mkdir -p "$work/compiler/low" "$work/compiler/high"
printf '# x\n\n## The ladder\n\n1. `low/`: below.\n2. `high/`: above.\n\n## Other\n' > "$work/compiler/README.md"
printf '#include "compiler/high/h.h"\n' > "$work/compiler/low/l.cc"
printf '#include "compiler/low/l.h"\n' > "$work/compiler/high/h.cc"
seq 801 > "$work/compiler/high/long.h"
if out="$(/usr/bin/python3 "$here/house_rules.py" "$work")"; then fail "a tree breaking both rules passed"; fi
[ "$out" = "compiler/low/l.cc: includes compiler/high/h.h, a higher floor than low/
compiler/high/long.h: 801 lines, over 800" ] || fail "unexpected report: $out"
rm "$work/compiler/low/l.cc" "$work/compiler/high/long.h"
# A function declared below and defined only above: the lower floor links up.
printf 'namespace x {\n\nint lift(const Plan& p,\n         int n);  // one\n\n}  // namespace x\n' > "$work/compiler/low/l.h"
printf '#include "compiler/low/l.h"\n\nnamespace x {\n\nint lift(const Plan& p, int n) { return n; }\nint lift(int n) { return n; }\n\n}  // namespace x\n' > "$work/compiler/high/h.cc"
out="$(/usr/bin/python3 "$here/house_rules.py" "$work")" && fail "a declaration below its only definition passed"
[ "$out" = "compiler/low/l.h: declares lift, defined only in compiler/high/h.cc, a higher floor than low/" ] || fail "unexpected report: $out"
# Defined on its own floor (as well): no breach.
printf '#include "compiler/low/l.h"\n\nnamespace x {\n\nint lift(const Plan&, int n) { return n; }\n\n}  // namespace x\n' > "$work/compiler/low/l.cc"
/usr/bin/python3 "$here/house_rules.py" "$work" || fail "a declaration defined on its own floor was reported"
mkdir "$work/compiler/stray"
out="$(/usr/bin/python3 "$here/house_rules.py" "$work")" && fail "a folder off the ladder passed"
[ "$out" = "compiler/stray/ is not on the ladder in compiler/README.md" ] || fail "unexpected report: $out"

/usr/bin/python3 "$here/house_rules.py" "$root"
