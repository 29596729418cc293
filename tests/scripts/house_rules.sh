#!/usr/bin/env bash
# The house rules of compiler/README.md: no include in compiler/ runs from a lower folder of
# the ladder to a higher one, and no source file passes 800 lines (house_rules.py says how).
# First the checker itself on a made-up tree that breaks both rules, then on this tree.
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
mkdir "$work/compiler/stray"
out="$(/usr/bin/python3 "$here/house_rules.py" "$work")" && fail "a folder off the ladder passed"
[ "$out" = "compiler/stray/ is not on the ladder in compiler/README.md" ] || fail "unexpected report: $out"

/usr/bin/python3 "$here/house_rules.py" "$root"
